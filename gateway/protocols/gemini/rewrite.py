"""Edits of a Gemini request: warnings, replaced results, refused calls, tools closed.

Every edit returns new objects; the client's contents are never mutated, never dropped or
reordered. A refused call is shown as the model's ``functionCall`` and a user
``functionResponse`` whose ``response`` is ``{"error": <observation>}`` (the shape the SDKs use
for a function that raised). Ids the gateway made up (``parse.SYNTHETIC``) are not sent.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.gemini.parse import SYNTHETIC, answered_ids, parts_of
from gateway.protocols.roles.edits import Edits
from gateway.trace.model import ToolCall
from gateway.wire import codec

Content = dict[str, Any]


def with_contents(payload: dict[str, Any], contents: list[Any]) -> dict[str, Any]:
    return {**payload, "contents": contents}


def add_anchor(contents: list[Any], text: str, placement: str) -> list[Any]:
    """The warning where the model reads it next: in the last user turn (after its function
    responses, which must answer the calls first), or, for ``tool_result``, inside the last
    function response. A conversation not ending with a user turn gets one."""
    last = contents[-1] if contents else None
    if not (isinstance(last, dict) and last.get("role") == "user"):
        return [*contents, {"role": "user", "parts": [{"text": text}]}]
    parts = list(last.get("parts") or ()) if isinstance(last.get("parts"), list) else []
    if placement == "tool_result":
        for at in range(len(parts) - 1, -1, -1):
            response = parts[at].get("functionResponse") if isinstance(parts[at], dict) else None
            if isinstance(response, dict) and isinstance(response.get("response"), dict):
                body = {**response["response"], "loopguard_note": text}
                parts[at] = {**parts[at], "functionResponse": {**response, "response": body}}
                return [*contents[:-1], {**last, "parts": parts}]
    return [*contents[:-1], {**last, "parts": [*parts, {"text": text}]}]


def result_index(contents: list[Any], call_id: str, after: int) -> int | None:
    """The user turn right after the model turn at ``after``, when it answers ``call_id``."""
    at = after + 1
    if at >= len(contents) or not isinstance(contents[at], dict) or contents[at].get("role") != "user":
        return None
    return at if call_id in _ids(contents, at) else None


def replace_result(contents: list[Any], index: int, text: str, call_id: str) -> list[Any]:
    content = contents[index]
    ids = _ids(contents, index)
    parts, n = [], 0
    for part in parts_of(content):
        response = part.get("functionResponse")
        if isinstance(response, dict):
            if n < len(ids) and ids[n] == call_id:
                part = {**part, "functionResponse": {**response, "response": {"error": text}}}
            n += 1
        parts.append(part)
    return [*contents[:index], {**content, "parts": parts}, *contents[index + 1 :]]


def veto_exchange(call: ToolCall, observation: str) -> list[Content]:
    ident = {} if call.id.startswith(SYNTHETIC) or not call.id else {"id": call.id}
    return [
        {"role": "model", "parts": [{"functionCall": {**ident, "name": call.name, "args": _args(call.arguments)}}]},
        {
            "role": "user",
            "parts": [{"functionResponse": {**ident, "name": call.name, "response": {"error": observation}}}],
        },
    ]


def corrective(answer: str, text: str) -> list[Content]:
    return [{"role": "model", "parts": [{"text": answer}]}, {"role": "user", "parts": [{"text": text}]}]


def without_tools(payload: dict[str, Any]) -> dict[str, Any]:
    """Function calling off (``mode: NONE``); the declarations stay, the history's calls name them."""
    config = tool_config_value if isinstance(tool_config_value := payload.get("toolConfig"), dict) else {}
    calling = (
        function_calling_config_value
        if isinstance(function_calling_config_value := config.get("functionCallingConfig"), dict)
        else {}
    )
    calling = {k: v for k, v in calling.items() if k != "allowedFunctionNames"}
    return {**payload, "toolConfig": {**config, "functionCallingConfig": {**calling, "mode": "NONE"}}}


def _ids(contents: list[Any], index: int) -> list[str | None]:
    responses = [
        p["functionResponse"] for p in parts_of(contents[index]) if isinstance(p.get("functionResponse"), dict)
    ]
    return answered_ids(contents[index - 1] if index > 0 else None, index - 1, responses)


def _args(arguments: str) -> Any:
    try:
        value = codec.loads(arguments)
    except codec.DecodeError:
        return {"arguments": arguments}
    return value if isinstance(value, dict) else {"arguments": value}


EDITS = Edits(
    add_anchor=add_anchor,
    result_index=result_index,
    replace_result=replace_result,
    veto_exchange=veto_exchange,
    corrective=corrective,
    without_tools=without_tools,
)
