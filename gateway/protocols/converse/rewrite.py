"""Interventions on a Converse request: the only code that edits one.

Every function returns new lists and dicts; the client's objects are never mutated, and no
message or block is dropped or reordered. Converse's rules are kept throughout: roles alternate
(user, assistant, user, ...), the ``toolResult`` blocks answering an assistant turn's ``toolUse``
blocks sit in the very next user turn (added text goes after them), no text block is blank, and
a request whose messages hold ``toolUse`` / ``toolResult`` blocks must carry a ``toolConfig``.
"""

from __future__ import annotations

import secrets
from typing import Any

from gateway.protocols.converse.parse import arguments_text, blocks_of, result_text
from gateway.protocols.roles.edits import Edits
from gateway.trace.model import VETO_MARKER, ToolCall
from gateway.wire import codec

Message = dict[str, Any]


class SystemNote(dict[str, Any]):
    """A note for the system prompt, carried in the message list until ``with_messages`` moves
    it to ``system`` (Converse has no system role in ``messages``)."""


def with_messages(payload: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
    """``payload`` carrying ``messages``; system notes moved to the end of ``system``."""
    notes = [m for m in messages if isinstance(m, SystemNote)]
    if not notes:
        out = {**payload, "messages": messages}
    else:
        system = given if isinstance(given := payload.get("system"), list) else []
        out = {
            **payload,
            "messages": [m for m in messages if not isinstance(m, SystemNote)],
            "system": [*system, *({"text": str(n.get("text", ""))} for n in notes)],
        }
    if _ends_with_own_veto(out["messages"]) and _thinking_on(payload):
        # With extended thinking on, Claude refuses a last assistant tool turn that does not
        # open with its signed reasoning, and a refused call the gateway shows has none.
        fields = payload["additionalModelRequestFields"]
        out["additionalModelRequestFields"] = {**fields, "thinking": {"type": "disabled"}}
    return out


# --- warn: the anchor ------------------------------------------------------------------------


def add_anchor(messages: list[Any], text: str, placement: str) -> list[Any]:
    """The warning where the model reads it next: the system prompt, the last tool result's
    content (``tool_result``), or a text block after the last user turn's results."""
    if placement == "system":
        return [*messages, SystemNote(text=text)]
    last = _last_user(messages)
    if last is None:  # no user turn to extend: one of its own, after the last assistant turn
        return [*messages, {"role": "user", "content": [{"text": text}]}]
    message = messages[last]
    content = blocks_of(message)
    if placement == "tool_result":
        at = next((i for i in range(len(content) - 1, -1, -1) if _result(content[i]) is not None), None)
        if at is not None:
            result = content[at]["toolResult"]
            inner = result.get("content") if isinstance(result.get("content"), list) else []
            noted = {**content[at], "toolResult": {**result, "content": [*inner, {"text": text}]}}
            return _replaced(messages, last, {**message, "content": [*content[:at], noted, *content[at + 1 :]]})
    return _replaced(messages, last, {**message, "content": [*content, {"text": text}]})


def _last_user(messages: list[Any]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if isinstance(message, dict) and not isinstance(message, SystemNote) and message.get("role") == "user":
            return index
    return None


# --- reject: a result replaced, a refused call shown -------------------------------------------


def result_index(messages: list[Any], call_id: str, after: int) -> int | None:
    """The user turn after ``after`` whose ``toolResult`` answers ``call_id``."""
    for index in range(max(after, 0) + 1, len(messages)):
        if any(_answers(block, call_id) for block in blocks_of(messages[index])):
            return index
    return None


def replace_result(messages: list[Any], index: int, text: str, call_id: str) -> list[Any]:
    """The ``toolResult`` answering ``call_id`` gets ``text`` as its only content and status
    ``error``: the observation says the call did not run. The turn's other results stay."""
    if not 0 <= index < len(messages) or not isinstance(messages[index], dict):
        return messages
    content = blocks_of(messages[index])
    spots = [i for i, block in enumerate(content) if _answers(block, call_id)]
    if not spots:
        return messages
    at = spots[-1]
    result = {**content[at]["toolResult"], "content": [{"text": text}], "status": "error"}
    blocks = [*content[:at], {**content[at], "toolResult": result}, *content[at + 1 :]]
    return _replaced(messages, index, {**messages[index], "content": blocks})


def veto_exchange(call: ToolCall, observation: str) -> list[Message]:
    """The refused call as the model proposed it, then its error observation in its place."""
    ident = call.id or f"tooluse_loopguard_{secrets.token_hex(8)}"
    use = {"toolUse": {"toolUseId": ident, "name": call.name, "input": _input(call.arguments)}}
    result = {"toolResult": {"toolUseId": ident, "content": [{"text": observation}], "status": "error"}}
    return [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]


def corrective(answer: str, text: str) -> list[Message]:
    """The model's plain answer, then a user turn with ``text``. Roles must alternate and no
    text may be blank, so an empty answer is kept as a placeholder rather than left out."""
    said = answer if answer.strip() else "(no answer)"
    return [{"role": "assistant", "content": [{"text": said}]}, {"role": "user", "content": [{"text": text}]}]


# --- tools closed ----------------------------------------------------------------------------


def without_tools(payload: dict[str, Any]) -> dict[str, Any]:
    """Ask for a plain text answer with no tool the model could call. Converse's ``toolChoice``
    has no ``none``, and a request whose history holds ``toolUse`` / ``toolResult`` blocks is
    refused without a ``toolConfig``: so the ``toolConfig`` goes, and the history's tool blocks
    are told as text (which call was made, what it returned), in the same messages and order."""
    out = {k: v for k, v in payload.items() if k != "toolConfig"}
    messages = payload.get("messages")
    if isinstance(messages, list):
        out["messages"] = [_told(m) for m in messages]
    return out


def _told(message: Any) -> Any:
    if not isinstance(message, dict) or not any("toolUse" in b or "toolResult" in b for b in blocks_of(message)):
        return message
    return {**message, "content": [_as_text(b) for b in blocks_of(message)]}


def _as_text(block: dict[str, Any]) -> dict[str, Any]:
    use, result = block.get("toolUse"), _result(block)
    if isinstance(use, dict):
        return {"text": f"[called {use.get('name')} with {arguments_text(use.get('input'))}]"}
    if result is not None:
        failed = " (failed)" if result.get("status") == "error" else ""
        said = result_text(result.get("content")) or "(nothing)"
        return {"text": f"[result{failed}: {said}]"}
    return block


# --- helpers ---------------------------------------------------------------------------------


def _result(block: Any) -> dict[str, Any] | None:
    result = block.get("toolResult") if isinstance(block, dict) else None
    return result if isinstance(result, dict) else None


def _answers(block: Any, call_id: str) -> bool:
    result = _result(block)
    return result is not None and result.get("toolUseId") == call_id


def _replaced(messages: list[Any], index: int, message: Message) -> list[Any]:
    return [*messages[:index], message, *messages[index + 1 :]]


def _input(arguments: str) -> Any:
    """``input`` must be a JSON document object; arguments that are not one are kept readable."""
    try:
        value = codec.loads(arguments) if arguments else {}
    except codec.DecodeError:
        value = None
    return value if isinstance(value, dict) else {"arguments": arguments}


def _ends_with_own_veto(messages: list[Any]) -> bool:
    """The last exchange is a refused call the gateway shows (its result is the gateway's note)."""
    if len(messages) < 2 or not all(isinstance(m, dict) for m in messages[-2:]):
        return False
    asked, answered = blocks_of(messages[-2]), blocks_of(messages[-1])
    if messages[-2].get("role") != "assistant" or (asked and "reasoningContent" in asked[0]):
        return False
    return any(
        (result := _result(b)) is not None
        and result.get("status") == "error"
        and result_text(result.get("content")).lstrip().startswith(VETO_MARKER)
        for b in answered
    )


def _thinking_on(payload: dict[str, Any]) -> bool:
    fields = payload.get("additionalModelRequestFields")
    thinking = fields.get("thinking") if isinstance(fields, dict) else None
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


EDITS = Edits(
    add_anchor=add_anchor,
    result_index=result_index,
    replace_result=replace_result,
    veto_exchange=veto_exchange,
    corrective=corrective,
    without_tools=without_tools,
)
