"""Converse in the offline tools: a recorded Converse body replayed in its own protocol, and the
savings estimate counting its text and pricing a Bedrock model id; the output tokens a reply or
a stream reported, read from its ``usage``."""

from __future__ import annotations

import io
import json

from support.converse_upstream import Said

from gateway.protocols.registry import BY_NAME
from gateway.replay.command import run_replay
from gateway.replay.reader import read_files
from gateway.savings import Pricer, estimate, one_round

CALL = {
    "role": "assistant",
    "content": [{"toolUse": {"toolUseId": "t1", "name": "read_file", "input": {"path": "a.txt"}}}],
}
HISTORY = [
    {"role": "user", "content": [{"text": "summarise a.txt " * 20}]},
    CALL,
    {"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "content": [{"text": "the same text " * 50}]}}]},
]
CHAT = [
    {"role": "user", "content": "summarise a.txt " * 20},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "the same text " * 50},
]


def looping_body(rounds: int) -> dict:
    messages = [HISTORY[0]]
    for n in range(rounds):
        use = {"toolUse": {"toolUseId": f"t{n}", "name": "read_file", "input": {"path": "a.txt"}}}
        result = {"toolResult": {"toolUseId": f"t{n}", "content": [{"text": "the same text"}]}}
        messages += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return {"system": [{"text": "Be brief."}], "messages": messages, "inferenceConfig": {"maxTokens": 100}}


def test_a_recorded_converse_body_is_read_and_replayed_in_its_own_protocol(tmp_path):
    path = tmp_path / "bedrock.jsonl"
    path.write_text(json.dumps({"request": looping_body(6)}) + "\n")
    (recorded,) = read_files([path]).conversations
    assert recorded.protocol == "converse" and recorded.path.startswith("/bedrock/model/")
    turns = recorded.conversation().turns
    assert [t.role for t in turns[:4]] == ["system", "user", "assistant", "tool"]
    out = io.StringIO()
    run_replay([str(path)], out=out, err=io.StringIO(), quiet=True)
    assert "no_progress" in out.getvalue() or "terminate" in out.getvalue(), out.getvalue()


def test_savings_count_converse_text_and_price_a_bedrock_model_id():
    adapter = BY_NAME["converse"]
    assert one_round(HISTORY, adapter) == [*HISTORY, CALL]
    chat = estimate(one_round(CHAT)).tokens
    mine = estimate(one_round(HISTORY, adapter), adapter).tokens
    assert mine > 200 and abs(mine - chat) < chat * 0.1, (mine, chat)
    saved = Pricer().savings(one_round(HISTORY, adapter), "anthropic.claude-3-5-haiku-20241022-v1:0", adapter)
    assert saved.tokens == mine and saved.cost and saved.cost > 0


def test_output_tokens_come_from_the_usage_of_a_reply_or_a_streams_metadata():
    replies = BY_NAME["converse"].build().replies
    said = Said(text="Done.")
    assert replies.output_tokens(json.dumps(said.reply([])).encode()) == 20
    assert replies.output_tokens(b"".join(said.events([]))) == 20
    assert replies.output_tokens(b"not a reply") is None
