"""``previous_response_id`` chains: a request carries only its new items.

The upstream keeps the earlier conversation; the gateway must see it too, or a looping agent
would look like a fresh one on every request. So after every stored response the gateway saves
what the upstream now holds for it (:class:`ChainRecord`: the conversation up to and including
the response's output, newest items first to go when it grows past the bounds), and a request
naming that response is judged on the record's items followed by its own.

The gateway may have withheld tool calls the upstream proposed in that response (a refused call
and the rest of its round). The upstream still expects an output for each of them, so the next
request in the chain carries the gateway's observation for every such call the client does not
answer itself (``owed``): the chain stays valid and the model sees why the call did not run.

The gateway's own refused-call exchanges are left out of a record: the guard shows a refused
call to the model again in later requests by itself, and a second copy would repeat it. For the
same reason such an exchange shown among the chain's items is not sent upstream again
(``by_reference``): the upstream has the chain, only what follows it goes. Should anything else
among the chain's items change, the conversation is sent whole instead (``whole``).

A request with ``store: false`` carries everything and is never recorded; an unknown id (another
gateway, expired state) means judging only what the request carries.

Records are kept per client (``key``): a response id is no secret (it shows in logs, URLs and
shared transcripts), and a record holds a whole conversation, tool outputs included. A client
naming another client's response finds nothing, exactly as for an unknown id: it is never judged
on, shown, or extending the other's conversation.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeGuard

from gateway import untrusted
from gateway.protocols.adapters import newest_within
from gateway.protocols.responses.parse import CALL_TYPES, OUTPUT_TYPES, content_text, input_items, item_type
from gateway.protocols.responses.rewrite import veto_exchange
from gateway.state.base import ChainRecord
from gateway.trace.model import VETO_MARKER, ToolCall

# The output the upstream gets for a call it proposed that the client never saw.
WITHHELD = f"{VETO_MARKER} This call was not run: the gateway withheld it because the agent was looping."

# Detectors read bounded windows of recent calls: a few hundred items is far more than they
# need, and the byte bound keeps one chain of large tool outputs from filling the store.
MAX_ITEMS = 256
MAX_BYTES = 256 * 1024

# The namespace of clients without a credential: "-" is no hex digit, so no response id a
# client chooses can make its key another client's (``c:<credential hash>:``).
ANONYMOUS = "c:-:"


def key(namespace: str, response_id: str) -> str:
    """Where a response's record is kept: under the namespace of the client that created it
    (``gateway.state.session.client_namespace``; "" for none). The id is the client's text:
    made a safe key first."""
    return (namespace or ANONYMOUS) + untrusted.key(response_id)


def previous_id(payload: Any) -> str | None:
    """The response this request continues, when the upstream is asked to remember it."""
    if not isinstance(payload, dict) or payload.get("store") is False:
        return None
    previous = payload.get("previous_response_id")
    return previous if isinstance(previous, str) and previous else None


def recorded(payload: Any) -> bool:
    """Is the response to this request worth recording? The upstream must store it (``store``
    is not false), and the request must look like part of a chain: it names a previous response,
    or it starts a conversation (no tool calls or results yet). Agents that send their whole
    history every time (the Agents SDK does) would otherwise cost a large write per response
    for records nobody reads; one that switches to chaining midway is judged on what it sends."""
    if not isinstance(payload, dict) or payload.get("store") is False:
        return False
    items = input_items(payload)
    if previous_id(payload) is not None or any(_is_observation(item) for item in items):
        return True  # a chain (sent whole when the gateway had to change its earlier items)
    return not any(item_type(item) in CALL_TYPES or item_type(item) in OUTPUT_TYPES for item in items)


def owed_outputs(dropped: Iterable[ToolCall], observation: str, custom_ids: set[str]) -> tuple[Any, ...]:
    """The gateway's output for each withheld call (``custom_ids``: custom tool calls)."""
    return tuple(veto_exchange(call, observation, call.id in custom_ids)[1] for call in dropped if call.id)


def next_record(
    prior: ChainRecord | None, sent: list[Any], output: list[Any], owed: tuple[Any, ...] = ()
) -> ChainRecord:
    """What the upstream holds after a response: the earlier chain, the items this request
    sent (without the gateway's refused-call exchanges), the response's output."""
    earlier = list(prior.items) if prior is not None else []
    return ChainRecord(tuple(bounded(without_vetoes([*earlier, *sent, *output]))), owed)


def without_vetoes(items: list[Any]) -> list[Any]:
    """``items`` without the gateway's refused-call exchanges: an id-less call and our
    observation answering it, as ``veto_exchange`` writes them (the guard shows them again by
    itself). Owed outputs stay where they were sent: the chain only ever grows at its end."""
    observed = {item.get("call_id") for item in items if _is_observation(item)}
    if not observed:
        return items
    ours = {
        item.get("call_id")
        for item in items
        if item_type(item) in CALL_TYPES and "id" not in item and item.get("call_id") in observed
    }
    if not ours:
        return items
    return [
        item
        for item in items
        if not (
            item.get("call_id") in ours
            and ((item_type(item) in CALL_TYPES and "id" not in item) or _is_observation(item))
        )
    ]


def fingerprint(history: list[Any]) -> tuple[Any, ...]:
    """What identifies a chain's items cheaply (kind, ids, role): ``by_reference`` checks a
    request still starts with them."""
    return tuple(
        (item_type(i), i.get("call_id"), i.get("id"), i.get("role")) if isinstance(i, dict) else None for i in history
    )


def by_reference(items: list[Any], size: int, known: tuple[Any, ...]) -> list[Any] | None:
    """The items to send with ``previous_response_id`` when ``items`` still start with the
    chain's ``size`` items (``known``: their fingerprint): the owed outputs, then what follows.
    Refused-call exchanges the guard re-showed among the chain's items are left out: the
    upstream saw each in its time (in a re-ask, or answered by an owed output). None when the
    chain's items changed otherwise."""
    kept: list[Any] = []
    skip = False
    for position, item in enumerate(items):
        if skip:
            skip = False
            continue
        following = items[position + 1] if position + 1 < len(items) else None
        if (
            len(kept) < size
            and item_type(item) in CALL_TYPES
            and "id" not in item
            and _is_observation(following)
            and following.get("call_id") == item.get("call_id")
        ):
            skip = True
            continue
        kept.append(item)
    if len(kept) < size or fingerprint(kept[:size]) != known:
        return None
    return [*owed_tail(kept[:size]), *kept[size:]]


def whole(items: list[Any]) -> list[Any]:
    """The conversation sent whole: our owed outputs stay only for calls it holds that nothing
    else answers (the upstream refuses an output without its call, or a second one)."""
    called = {i.get("call_id") for i in items if item_type(i) in CALL_TYPES}
    answers: dict[Any, int] = {}
    for item in items:
        if item_type(item) in OUTPUT_TYPES:
            answers[item.get("call_id")] = answers.get(item.get("call_id"), 0) + 1
    drop = {
        id(i)
        for i in items
        if _is_observation(i)
        and (i.get("call_id") not in called or (answers[i.get("call_id")] > 1 and not _answers_ours(i, items)))
    }
    return [i for i in items if id(i) not in drop] if drop else items


def _answers_ours(output: dict[str, Any], items: list[Any]) -> bool:
    """Is ``output`` the observation of a refused-call exchange (right after its id-less call)?"""
    position = next(n for n, i in enumerate(items) if i is output)
    before = items[position - 1] if position else None
    if not isinstance(before, dict) or item_type(before) not in CALL_TYPES or "id" in before:
        return False
    return bool(before.get("call_id") == output.get("call_id"))


def owed_tail(history: list[Any]) -> list[Any]:
    """The owed outputs at the end of a chain's history (the adapter puts them there): outputs
    for calls the history does not hold."""
    called = {item.get("call_id") for item in history if item_type(item) in CALL_TYPES}
    start = len(history)
    while start and item_type(last := history[start - 1]) in OUTPUT_TYPES and last.get("call_id") not in called:
        start -= 1
    return history[start:]


def bounded(items: list[Any]) -> list[Any]:
    """The newest items within MAX_ITEMS and MAX_BYTES."""
    items = items[-MAX_ITEMS:]
    start = newest_within(items, MAX_BYTES)
    while start < len(items) and item_type(items[start]) in OUTPUT_TYPES:
        start += 1  # an output whose call was cut off would look owed
    return items[start:]


def _is_observation(item: Any) -> TypeGuard[dict[str, Any]]:
    if not isinstance(item, dict) or item_type(item) not in OUTPUT_TYPES:
        return False
    output = item.get("output")
    text = output if isinstance(output, str) else content_text(output)
    return text.lstrip().startswith(VETO_MARKER)
