"""``Edits``: the gateway's interventions written into a request's items.

Rule: never drop or reorder an item the edit did not mean to change (edits insert or append),
and keep the protocol's ordering rules (a tool result still follows its call).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.trace.model import ToolCall

Items = list[Any]


@dataclass(frozen=True, slots=True)
class Edits:
    # (items, text, placement): warn: ``text`` where the model reads it before its next step
    # (``placement``: the policy's ``system`` | ``user`` | ``tool_result``).
    add_anchor: Callable[[Items, str, str], Items]
    # (items, call_id, after): where the result of call ``call_id`` (issued by the entry at
    # ``after``) is, if any.
    result_index: Callable[[Items, str, int], int | None]
    # (items, index, text, call_id): an executed call already at reject level: its result (the
    # one answering ``call_id`` in the entry at ``index``) becomes ``text``. One entry may answer
    # several calls (Anthropic: a ``tool_result`` per parallel call), so the id says which.
    replace_result: Callable[[Items, int, str, str], Items]
    # (call, observation): the entries that show the model a refused call with the gateway's
    # error observation as its result (chat: an assistant message + a tool message).
    veto_exchange: Callable[[ToolCall, str], Items]
    # (answer, text): the model's plain ``answer`` and a user entry with ``text``: appended to
    # re-ask for a tool call the turn requires.
    corrective: Callable[[str, str], Items]
    # The payload asking for a plain text answer: tools disabled the protocol's way.
    without_tools: Callable[[dict[str, Any]], dict[str, Any]]
