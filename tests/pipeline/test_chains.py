"""Conversations the upstream keeps: an adapter with a history role supplies the entries a request
only refers to (``history``), which are judged but not re-sent, and stores each reply
(``remember``). Exercised with chat messages and a made-up ``previous_id`` field."""

from __future__ import annotations

from dataclasses import replace

import orjson
from support.seen import anchors
from support.upstream import Reply

from gateway.pipeline.route import Guarded
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.protocols.roles import History

from .bodies import looping_history, post


class Chain:
    """A made-up server-side chain: each reply's conversation, by the reply's id."""

    def __init__(self) -> None:
        self.saved: dict[str, list] = {}

    async def history(self, payload, store, namespace):
        return list(self.saved.get(payload.get("previous_id"), []))

    async def remember(self, sent, reply, store, namespace, client=None, untouched=False):
        earlier = self.saved.get(sent.get("previous_id"), [])
        self.saved[reply["id"]] = [*earlier, *sent["messages"], reply["choices"][0]["message"]]

    def outgoing(self, payload, items, history=0, namespace=""):
        body = {**payload, "messages": items[history:]}  # the upstream holds the rest
        return body if history else {k: v for k, v in body.items() if k != "previous_id"}


def chained(chain: Chain):
    """Chat with ``chain`` as its history role."""
    role = History(chain.history, chain.remember, lambda p, ns="": p, lambda p, r: [], lambda p: [], chain.outgoing)
    return replace(CHAT, name="chained", history=role)


def test_a_loop_spread_over_a_chain_is_judged_whole_and_only_new_entries_go_upstream(start_guarded):
    def model(request):
        return Reply(content="done") if "previous_id" in request else Reply(tool_calls=[("read_file", "{}")])

    upstream, client, _ = start_guarded(model)
    app = client.gateway_app
    chain = Chain()
    adapter = chained(chain)
    app.guarded["/v1/chat/completions"] = Guarded(adapter, app.state.gateway)

    first = post(client, orjson.dumps({"model": "m", "messages": looping_history(2)}))
    assert first.headers["x-loopguard-action"] == "pass"
    reply = first.json()
    call_id = reply["choices"][0]["message"]["tool_calls"][0]["id"]
    assert chain.saved[reply["id"]][-1]["tool_calls"][0]["id"] == call_id  # remembered

    result = {"role": "tool", "tool_call_id": call_id, "content": "same"}
    second = post(client, orjson.dumps({"model": "m", "previous_id": reply["id"], "messages": [result]}))
    # Alone the request holds no loop; with its chain it is the third identical call: warned.
    assert second.headers["x-loopguard-action"] == "warn"
    sent = upstream.last["json"]
    assert sent["messages"][0] == result and anchors(sent)  # the new entry and the warning...
    assert len(sent["messages"]) == 2 and sent["previous_id"] == reply["id"]  # ...not the chain
