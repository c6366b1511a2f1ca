"""Interventions on an Anthropic Messages request: the only code that edits one.

Every function returns new lists and dicts; the client's objects are never mutated, and no
message or block is dropped or reordered: edits only append or replace a result's content.
Anthropic's ordering rule is kept throughout: the ``tool_result`` blocks answering an assistant
turn's ``tool_use`` blocks open the very next user turn, so added text goes after them.
"""

from __future__ import annotations

import secrets
from typing import Any, cast

from gateway.protocols.anthropic.answers import corrective
from gateway.protocols.roles.edits import Edits
from gateway.trace.model import VETO_MARKER, ToolCall
from gateway.wire import codec

Message = dict[str, Any]


class SystemNote(dict[str, Any]):
    """A note for the system prompt, carried in the message list until ``with_items`` moves it
    to ``system`` (Anthropic has no system role in ``messages``). A type of its own, so a
    client's own (invalid) ``role: system`` message is never moved."""


# --- warn: the anchor ------------------------------------------------------------------------


def add_anchor(messages: list[Any], text: str, placement: str) -> list[Any]:
    if placement == "system":
        return [*messages, SystemNote(role="system", content=text)]
    last = _last_user(messages)
    if last is None:  # no user turn to extend: a user turn of its own
        return [*messages, {"role": "user", "content": [_text(text)]}]
    if placement == "tool_result" and last == len(messages) - 1:
        noted = _note_last_result(messages[last], text)
        if noted is not None:
            return [*messages[:last], noted]
    return [*messages[:last], _append_block(messages[last], _text(text)), *messages[last + 1 :]]


def _last_user(messages: list[Any]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and message.get("role") == "user" and not isinstance(message, SystemNote):
            return index
    return None


def _append_block(message: Message, block: dict[str, Any]) -> Message:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, block]}
    before = [_text(content)] if isinstance(content, str) and content else []
    return {**message, "content": [*before, block]}


def _note_last_result(message: Message, text: str) -> Message | None:
    """The note appended to the content of the message's last ``tool_result`` block."""
    content = message.get("content")
    if not isinstance(content, list):
        return None
    at = next((i for i in range(len(content) - 1, -1, -1) if _is_result(content[i])), None)
    if at is None:
        return None
    result = content[at]
    noted = {**result, "content": _with_text(result.get("content"), text)}
    return {**message, "content": [*content[:at], noted, *content[at + 1 :]]}


def _with_text(content: Any, text: str) -> Any:
    if isinstance(content, list):
        return [*content, _text(text)]
    if isinstance(content, str) and content:
        return f"{content}\n\n{text}"
    return text


# --- reject: a result replaced, a refused call shown -------------------------------------------


def result_index(messages: list[Any], call_id: str, after: int) -> int | None:
    """The user turn after ``after`` whose ``tool_result`` answers ``call_id``."""
    for index in range(max(after, 0) + 1, len(messages)):
        content = messages[index].get("content") if isinstance(messages[index], dict) else None
        if isinstance(content, list) and any(_is_result(b) and b.get("tool_use_id") == call_id for b in content):
            return index
    return None


def replace_result(messages: list[Any], index: int, text: str, call_id: str) -> list[Any]:
    """The ``tool_result`` answering ``call_id`` gets ``text`` as its content and
    ``is_error: true``: the observation says the call did not run. The other results of the
    turn (parallel calls) stay as they are; when no result answers ``call_id`` nothing changes,
    since refusing another call's result would misreport what ran."""
    message = messages[index] if 0 <= index < len(messages) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return messages
    spots = [i for i, block in enumerate(content) if _is_result(block) and block.get("tool_use_id") == call_id]
    if not spots:
        return messages
    at = spots[-1]
    blocks = list(content)
    blocks[at] = {**blocks[at], "content": text, "is_error": True}
    out = list(messages)
    out[index] = {**cast(Message, message), "content": blocks}
    return out


def veto_exchange(call: ToolCall, observation: str) -> list[Message]:
    """The refused call as the model proposed it, then its error observation in its place."""
    ident = call.id or f"toolu_loopguard_{secrets.token_hex(12)}"
    use = {"type": "tool_use", "id": ident, "name": call.name, "input": _input(call.arguments)}
    result = {"type": "tool_result", "tool_use_id": ident, "content": observation, "is_error": True}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def _input(arguments: str) -> Any:
    """``input`` must be an object; arguments that are not one are kept readable under a key."""
    try:
        value = codec.loads(arguments) if arguments else {}
    except codec.DecodeError:
        value = None
    return value if isinstance(value, dict) else {"arguments": arguments}


# --- the payload -----------------------------------------------------------------------------


def with_messages(payload: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
    """``payload`` carrying ``messages``; system notes moved to the end of the system prompt."""
    notes = [m for m in messages if isinstance(m, SystemNote)]
    out = {**payload, "messages": [m for m in messages if not isinstance(m, SystemNote)] if notes else messages}
    if notes:
        out["system"] = _system_with(payload.get("system"), [str(n.get("content", "")) for n in notes])
    if _ends_with_own_veto(out["messages"]) and _thinking_on(payload):
        # With thinking on, the API refuses a final assistant tool_use turn that does not open
        # with the model's signed thinking block, and a refused call shown by the gateway has
        # none: this request goes without thinking rather than fail.
        out["thinking"] = {"type": "disabled"}
    return out


def _system_with(system: Any, notes: list[str]) -> Any:
    if isinstance(system, list):
        return [*system, *(_text(n) for n in notes)]
    if isinstance(system, str) and system:
        return "\n\n".join([system, *notes])
    return "\n\n".join(notes)


def _ends_with_own_veto(messages: list[Any]) -> bool:
    """The last assistant turn is a refused call the gateway shows (its result is our note)."""
    if len(messages) < 2 or not isinstance(messages[-1], dict) or not isinstance(messages[-2], dict):
        return False
    answer, asked = messages[-1].get("content"), messages[-2].get("content")
    if messages[-2].get("role") != "assistant" or not isinstance(answer, list) or not isinstance(asked, list):
        return False
    opens_with_thinking = (
        bool(asked) and isinstance(asked[0], dict) and asked[0].get("type") in ("thinking", "redacted_thinking")
    )
    return not opens_with_thinking and any(
        _is_result(b)
        and b.get("is_error") is True
        and isinstance(b.get("content"), str)
        and b["content"].lstrip().startswith(VETO_MARKER)
        for b in answer
    )


def _thinking_on(payload: dict[str, Any]) -> bool:
    thinking = payload.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def without_tools(payload: dict[str, Any]) -> dict[str, Any]:
    """Ask for a plain text answer. ``tools`` stay: the history's tool_use blocks need them."""
    return {**payload, "tool_choice": {"type": "none"}}


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _is_result(block: Any) -> bool:
    return isinstance(block, dict) and block.get("type") == "tool_result"


EDITS = Edits(
    add_anchor=add_anchor,
    result_index=result_index,
    replace_result=replace_result,
    veto_exchange=veto_exchange,
    corrective=corrective,
    without_tools=without_tools,
)
