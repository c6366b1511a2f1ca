"""One LiteLLM proxy for this directory (it takes seconds to start), in front of one upstream
whose model loops or behaves depending on the conversation's first prompt."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import openai
import orjson
import pytest
from support.anthropic_upstream import AnthropicUpstream, Said
from support.litellm_proxy import MASTER_KEY, Proxy, litellm_proxy, proxy_config
from support.looping import RespondingUpstream
from support.policies import ladder_policy
from support.responses_upstream import ResponsesUpstream
from support.responses_upstream import stubborn as responses_stubborn
from support.servers import serve
from support.upstream import Reply

HEALTHY = "healthy:"  # prompts starting with this get a model that reads three files and answers
TWO_ANSWERS = "two answers:"  # with n=2: one answer repeats the loop's call, the other moves on
CHATTY = "chatty:"  # the loop's model says SAYING next to each call
SAYING = "Let me read a.txt again."
FINAL = "Final answer, tools closed: a.txt says the same text every time."  # the model's own answer


def model(request: dict) -> Reply:
    messages = request.get("messages") or []
    prompt = next((m.get("content") for m in messages if m.get("role") == "user"), "") or ""
    if request.get("tool_choice") == "none":  # asked for its final answer: it writes one
        return Reply(content=FINAL)
    if prompt.startswith(TWO_ANSWERS) and request.get("n") == 2:
        return Reply(body=orjson.dumps(two_answers(request.get("model", ""))))
    if prompt.startswith(CHATTY):
        return Reply(content=SAYING, tool_calls=[("read_file", '{"path": "a.txt"}')])
    if not prompt.startswith(HEALTHY):
        return Reply(tool_calls=[("read_file", '{"path": "a.txt"}')])  # loops whatever it is told
    done = sum(1 for m in messages if m.get("role") == "tool")
    if done < 3:
        return Reply(tool_calls=[("read_file", f'{{"path": "{done}.txt"}}')])
    return Reply(content="All three files read.")


def two_answers(model: str) -> dict:
    def choice(index: int, name: str, args: str) -> dict:
        call = {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": args}}
        return {
            "index": index,
            "message": {"role": "assistant", "content": None, "tool_calls": [call]},
            "finish_reason": "tool_calls",
        }

    return {
        "id": "chatcmpl-two",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [choice(0, "read_file", '{"path": "a.txt"}'), choice(1, "list_dir", '{"path": "."}')],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


@pytest.fixture(scope="package")
def upstream():
    responding = RespondingUpstream(model)
    with serve(responding.app) as url:
        responding.url = url
        yield responding


@pytest.fixture(scope="package")
def responses_upstream():
    """The Responses API's model (``gpt-4.1`` in the proxy): loops unless told to answer."""
    upstream = ResponsesUpstream(responses_stubborn())
    with serve(upstream.app) as url:
        upstream.url = url
        yield upstream


CLAUDE_FINAL = "Final answer from Claude, tools closed."


def claude(body: dict) -> Said:
    """Anthropic Messages' model: loops on read_file unless its tools are closed."""
    if (body.get("tool_choice") or {}).get("type") == "none":
        return Said(text=CLAUDE_FINAL)
    return Said(calls=[("read_file", {"path": "a.txt"})])


@pytest.fixture(scope="package")
def anthropic_upstream():
    upstream = AnthropicUpstream(claude)
    with serve(upstream.app) as url:
        upstream.url = url
        yield upstream


@contextmanager
def guarded_proxy(
    upstream,
    workdir: Path,
    modes: list[str],
    policy_extra: str = "",
    responses_url: str | None = None,
    anthropic_url: str | None = None,
) -> Iterator[Proxy]:
    """The proxy with the guardrail as an operator enables it; no_progress warns at 3 repeats,
    rejects at 4, terminates at 5."""
    policy = workdir / "policy.yaml"
    policy.write_text(ladder_policy(policy_extra))
    guardrail = {
        "guardrail_name": "loopguard",
        "litellm_params": {
            "guardrail": "gateway.integrations.litellm.LoopGuardrail",
            "mode": modes,
            "default_on": True,
            "loopguard_policy": str(policy),
        },
    }
    with litellm_proxy(proxy_config(upstream.url, guardrail, responses_url, anthropic_url), workdir) as running:
        yield running


def sdk(proxy: Proxy) -> openai.OpenAI:
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key=MASTER_KEY, max_retries=0, timeout=60)


@pytest.fixture(scope="package")
def proxy(upstream, responses_upstream, anthropic_upstream, tmp_path_factory):
    with guarded_proxy(
        upstream,
        tmp_path_factory.mktemp("litellm"),
        ["pre_call", "post_call"],
        responses_url=responses_upstream.url,
        anthropic_url=anthropic_upstream.url,
    ) as running:
        yield running


@pytest.fixture
def client(proxy):
    return sdk(proxy)
