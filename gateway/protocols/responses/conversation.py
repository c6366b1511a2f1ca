"""Responses ``conversation``: the upstream keeps the conversation, a request sends only new items.

With ``conversation: "conv_..."`` the upstream prepends the conversation's items to the input
and appends the input and the response's output to it afterwards. A looping agent would look
new on every request, so the gateway keeps its own record of what passed through it for each
conversation (:class:`ChainRecord` under the client's namespace and the conversation id: the
items the client sent and the output as it reached the client, never the gateway's notes) and
judges every request on that record followed by its own items.

What goes upstream. The conversation only ever grows, so every request the gateway sends keeps
it valid rather than forking it:
- the client's request goes as it is, with the outputs the gateway owes first (calls the
  upstream proposed that the client never saw, as for ``previous_response_id`` chains) and the
  gateway's warning appended when there is one (the conversation then holds it, as a stored
  chain does);
- a re-ask or the closed-tools final answer continues the same conversation: the upstream holds
  the refused round already, so it gets an output for each call of that round (the gateway's
  observation for the refused call, "not run" for the rest of the round) and what the gateway
  adds after them (a corrective message, the final answer's note), never the client's items a
  second time (``Pending``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.protocols.responses import chain
from gateway.protocols.responses.parse import CALL_TYPES, OUTPUT_TYPES, item_type
from gateway.protocols.responses.rewrite import veto_exchange
from gateway.state.base import ChainRecord
from gateway.trace.model import ToolCall

EMPTY = ChainRecord(())


def conversation_id(payload: Any) -> str | None:
    """The conversation the request belongs to: ``"conv_..."`` or ``{"id": "conv_..."}``."""
    value = payload.get("conversation") if isinstance(payload, dict) else None
    if isinstance(value, dict):
        value = value.get("id")
    return value if isinstance(value, str) and value else None


def key(namespace: str, conversation: str) -> str:
    return (namespace or chain.ANONYMOUS) + "conversation:" + conversation


@dataclass(slots=True)
class Pending:
    """One exchange's position in its conversation: how many of the request's own items (and
    the gateway's additions after them) the upstream holds, and the round of calls it proposed
    last, which the next request must answer."""

    held: int = 0
    round: list[ToolCall] = field(default_factory=list)
    answered: bool = True  # no reply since the last request was built


def outgoing(
    payload: dict[str, Any],
    items: list[Any],
    history: int,
    record: ChainRecord,
    pending: Pending,
    custom: set[str],
    withheld: str,
) -> dict[str, Any]:
    """The body to send for ``items`` (the whole conversation the model must see; the first
    ``history`` unchanged from the record)."""
    size = len(record.items) + len(record.owed)
    if history == size:
        tail = items[size:]
    else:
        sent = chain.by_reference(items, size, chain.fingerprint([*record.items, *record.owed]))
        if sent is None:  # the earlier items changed otherwise: only new items can go
            sent = [*record.owed, *items[size:]]
        tail = sent[len(record.owed) :]
    if pending.answered:  # the client's request: owed outputs, then its items
        body = [*record.owed, *tail]
    else:  # the gateway asks again: answer the round the upstream holds, then what it adds
        body = [
            *_answers(pending.round, tail[pending.held :], custom, withheld),
            *_added(tail[pending.held :], pending.round),
        ]
    pending.held, pending.answered = len(tail), True
    own = payload.get("input")
    if isinstance(own, list) and len(body) == len(own) and all(a is b for a, b in zip(body, own, strict=False)):
        return payload
    return {**payload, "input": body}


def _answers(round_: list[ToolCall], new: list[Any], custom: set[str], withheld: str) -> list[Any]:
    """An output for every call of the held round: the observation the gateway showed for it
    when there is one among ``new``, else ``withheld``."""
    shown = {item.get("call_id"): item for item in new if item_type(item) in OUTPUT_TYPES}
    out = []
    for call in round_:
        if not call.id:
            continue
        out.append(shown.get(call.id) or veto_exchange(call, withheld, call.id in custom)[1])
    return out


def _added(new: list[Any], round_: list[ToolCall]) -> list[Any]:
    """What the gateway added after the held round, without the round's own calls and outputs
    (a refused call shown again is the upstream's call already) and the model's own answers
    (a corrective re-ask repeats the answer the upstream holds)."""
    ids = {call.id for call in round_}
    return [
        item
        for item in new
        if not ((item_type(item) in CALL_TYPES or item_type(item) in OUTPUT_TYPES) and item.get("call_id") in ids)
        and not (isinstance(item, dict) and item.get("role") == "assistant")
    ]


def next_record(
    prior: ChainRecord | None, client: dict[str, Any], output: list[Any], owed: tuple[Any, ...]
) -> ChainRecord:
    """The conversation as the client saw it after this exchange."""
    earlier = [*prior.items, *prior.owed] if prior is not None else []
    own = client.get("input")
    own = [{"role": "user", "content": own}] if isinstance(own, str) else own if isinstance(own, list) else []
    return ChainRecord(tuple(chain.bounded(chain.without_vetoes([*earlier, *own, *output]))), owed)
