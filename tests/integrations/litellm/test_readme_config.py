"""The proxy config of the documentation's LiteLLM page (docs/litellm.md), as written: it starts a real LiteLLM proxy, and a looping agent
through it is ended with the model's own answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from support.agent import Agent
from support.litellm_proxy import MASTER_KEY, ROOT, litellm_proxy

from .conftest import FINAL, sdk

pytestmark = pytest.mark.litellm_proxy

_BLOCK = re.compile(r"<!-- litellm-config:start -->\s*```yaml\n(.*?)```\s*<!-- litellm-config:end -->", re.S)


def readme_config() -> dict:
    text = (ROOT / "docs" / "litellm.md").read_text(encoding="utf-8")
    return yaml.safe_load(_BLOCK.search(text).group(1))


@pytest.fixture(scope="module")
def readme_proxy(upstream, tmp_path_factory):
    # The page's values are read from the environment, as an operator sets it
    # (OPENAI_BASE_URL: the test's model instead of api.openai.com).
    with litellm_proxy(
        readme_config(),
        Path(tmp_path_factory.mktemp("readme")),
        OPENAI_API_KEY="sk-upstream",
        OPENAI_BASE_URL=upstream.url + "/v1",
        LITELLM_MASTER_KEY=MASTER_KEY,
    ) as running:
        yield running


def test_the_readme_config_names_a_master_key_and_the_guardrail():
    config = readme_config()
    assert config["general_settings"]["master_key"] == "os.environ/LITELLM_MASTER_KEY"
    assert config["guardrails"][0]["litellm_params"]["guardrail"] == "gateway.integrations.litellm.LoopGuardrail"


@pytest.mark.parametrize("stream", [False, True], ids=["unary", "stream"])
def test_the_readme_proxy_ends_a_looping_agent_with_the_models_own_answer(readme_proxy, stream):
    agent = Agent(sdk(readme_proxy), tools={"read_file": lambda a: "the same text"}, stream=stream, model="gpt-4o")
    answer = agent.run(f"summarise a.txt (readme, {'stream' if stream else 'unary'})")
    assert answer == FINAL
    assert agent.executions["read_file"] <= 8
