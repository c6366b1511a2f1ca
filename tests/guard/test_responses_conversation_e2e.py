"""The Responses API's ``conversation`` end to end: an agent loop with the openai SDK that keeps
its history in a conversation (each request sends only its new items), the real gateway, and a
scripted upstream with the Conversations API's rules (a call left without output breaks the
conversation). A looping agent on a conversation is ended like one sending its whole history."""

from __future__ import annotations

import httpx
import pytest
from support.policies import example_policy
from support.responses_agent import ResponsesAgent
from support.responses_upstream import Answer, finishing, guarded, sdk, start_responses, stubborn

MODES = ["unary", "stream", "helper"]


def run(url: str, mode: str, in_conversation: bool) -> ResponsesAgent:
    api = sdk(url)
    talk = api.conversations.create().id if in_conversation else None
    agent = ResponsesAgent(api, tools={"read_file": lambda a: "contents of a.txt"}, mode=mode, conversation=talk)
    agent.run("Summarize a.txt", max_steps=19)
    return agent


@pytest.mark.parametrize("mode", MODES)
def test_a_looping_agent_on_a_conversation_is_ended_like_one_sending_its_whole_history(start_responses, mode):
    _, whole_url = start_responses(stubborn())
    whole = run(whole_url, mode, in_conversation=False)
    upstream, url = start_responses(stubborn())
    talking = run(url, mode, in_conversation=True)

    assert talking.executions == whole.executions and talking.executions["read_file"] == 3
    assert len(talking.responses) == len(whole.responses) < 19
    assert talking.responses[-1].output_text == whole.responses[-1].output_text
    assert not [r for r in talking.responses[-1].output if r.type == "function_call"]
    posted = [r for r in upstream.requests if r["path"] == "/v1/responses"]
    assert all(r["json"].get("conversation") for r in posted)  # nothing left the conversation
    # Every request after the first sent only new items: never the whole history again.
    assert all(len(r["json"]["input"]) <= 3 for r in posted)


def test_a_healthy_conversation_goes_upstream_as_the_client_sent_it(start_responses):
    upstream, url = start_responses(finishing(3))
    agent = run(url, "unary", in_conversation=True)

    assert agent.executions["read_file"] == 3 and agent.responses[-1].output_text
    posted = [r for r in upstream.requests if r["path"] == "/v1/responses"]
    assert len(posted) == 4
    sent_by_client = [r["raw"] for r in posted]
    assert all(b'"conversation"' in raw for raw in sent_by_client)


PORTFOLIO = [
    {
        "type": "function",
        "name": "portfolio",
        "description": "The user's holdings.",
        "strict": False,
        "parameters": {"type": "object", "properties": {"mode": {"type": "string"}}},
    }
]
PROMPT = "what do i hold"


def forgetful(conversation: list, body: dict) -> Answer:
    """Guesses instead of calling the required tool, until the gateway's corrective message."""
    last = conversation[-1]
    if last.get("type") == "function_call_output":
        return Answer("You hold 100 shares of 600519.")
    if last.get("role") == "user" and str(last.get("content")).lower().startswith("[loopguard]"):
        return Answer(calls=[("portfolio", '{"mode": "view"}')])
    return Answer("I guess you hold some stocks.")


@pytest.mark.parametrize("mode", MODES)
def test_a_corrective_re_ask_continues_the_conversation_without_resending_the_clients_items(tmp_path, mode):
    """The model's plain answer is held in the conversation already: the re-ask adds only the
    corrective message, streamed or not (a round without calls is a round the upstream holds)."""
    with guarded(forgetful, tmp_path, example_policy("portfolio")) as (upstream, url):
        api = sdk(url)
        talk = api.conversations.create().id
        agent = ResponsesAgent(
            api, tools={"portfolio": lambda a: "| 600519 | 100 |"}, mode=mode, conversation=talk, specs=PORTFOLIO
        )
        assert agent.run(PROMPT) == "You hold 100 shares of 600519."

    assert agent.executions["portfolio"] == 1
    held = upstream.conversations[talk]
    assert next(i.get("content") for i in held if i.get("role") == "user") == PROMPT
    assert sum(i.get("content") == PROMPT for i in held) == 1  # sent once, never again
    reasked = [r["json"]["input"] for r in upstream.requests if r["path"] == "/v1/responses"][1]
    assert [i.get("role") for i in reasked] == ["user"] and reasked[0]["content"] != PROMPT
