"""A real LiteLLM proxy (``litellm --config ...``) on 127.0.0.1, with LoopGuard's guardrail.

The proxy imports this checkout's ``gateway`` (PYTHONPATH), prices offline
(``LITELLM_LOCAL_MODEL_COST_MAP``), sends no telemetry, and talks only to the test's upstream.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml

from support.process import ROOT, child_env, console_script, free_port, serving

MASTER_KEY = "sk-loopguard-proxy-test-7f3a9c2e5b8d4f1a6e0c9b2d7a4f8e1c"
MODEL = "test-model"


@dataclass
class Proxy:
    url: str
    process: subprocess.Popen
    log_path: Path

    @property
    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


RESPONSES_MODEL = "gpt-4.1"  # the Responses agent's (support.responses_agent)
# A price for the test models, so that LiteLLM's spend counts every call it makes, re-asks too;
# and ``max_retries``: the provider client inside LiteLLM retries a request whose pooled
# connection the scripted upstream closed as idle just as it was reused (a connection error no
# test means; it showed under the parallel suite's load). A healthy run retries nothing.
PRICE = {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}
PARAMS = {**PRICE, "max_retries": 2}


ANTHROPIC_MODEL = "claude-sonnet-4-6"  # the Claude agent's (support.claude_agent)


def proxy_config(
    upstream_url: str, guardrail: dict, responses_url: str | None = None, anthropic_url: str | None = None
) -> dict:
    models = [
        {
            "model_name": MODEL,
            "litellm_params": {
                "model": f"openai/{MODEL}",
                "api_base": upstream_url + "/v1",
                "api_key": "sk-upstream",
                **PARAMS,
            },
        }
    ]
    if responses_url is not None:
        models.append(
            {
                "model_name": RESPONSES_MODEL,
                "litellm_params": {
                    "model": f"openai/{RESPONSES_MODEL}",
                    "api_base": responses_url + "/v1",
                    "api_key": "sk-upstream",
                    **PARAMS,
                },
            }
        )
    if anthropic_url is not None:
        models.append(
            {
                "model_name": ANTHROPIC_MODEL,
                "litellm_params": {
                    "model": f"anthropic/{ANTHROPIC_MODEL}",
                    "api_base": anthropic_url,
                    "api_key": "sk-ant-upstream",
                    **PARAMS,
                },
            }
        )
    return {
        "model_list": models,
        "guardrails": [guardrail],
        # prometheus: LiteLLM's /metrics, where the guardrail's savings counters show up too
        "litellm_settings": {"telemetry": False, "num_retries": 0, "callbacks": ["prometheus"]},
        "general_settings": {"master_key": MASTER_KEY},
    }


def litellm_command() -> list[str]:
    found = console_script("litellm")
    if not found:
        raise RuntimeError("the litellm CLI is missing: pip install -e '.[test]' (litellm[proxy])")
    return [found]


@contextmanager
def litellm_proxy(config: dict, workdir: Path, ready_timeout: float = 180.0, **env: str) -> Iterator[Proxy]:
    """Start the proxy, wait until it is ready (it takes seconds to import), stop it after.
    ``env``: more environment for it (what a config's ``os.environ/...`` values read)."""
    path = workdir / "litellm.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    port = free_port()
    log_path = workdir / "litellm.log"
    env = child_env(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        NO_PROXY="*",
        no_proxy="*",
        **env,
    )
    command = [
        *litellm_command(),
        "--config",
        str(path),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--num_workers",
        "1",
    ]
    url = f"http://127.0.0.1:{port}"
    # Its readiness probe is slow while it imports: probed less often, given longer to answer.
    with serving(
        command,
        log_path,
        url + "/health/readiness",
        env=env,
        cwd=workdir,
        ready_timeout=ready_timeout,
        probe_timeout=2,
        poll_s=0.2,
        stop_timeout=15,
        stdout_too=True,
    ) as process:
        yield Proxy(url, process, log_path)


__all__ = ["MASTER_KEY", "MODEL", "RESPONSES_MODEL", "ROOT", "Proxy", "litellm_proxy", "proxy_config"]
