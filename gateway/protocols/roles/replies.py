"""``Replies``: a whole (non-streaming) upstream reply read and amended.

Rule: an unreadable reply is "nothing found" (it goes out untouched); an amended reply is still
one the protocol's official SDK accepts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.protocols.base import Answer
from gateway.trace.model import ToolCall

Reply = dict[str, Any]


def _as_written(reply: Any, written: Any) -> Any:
    return written


@dataclass(frozen=True, slots=True)
class Replies:
    # What a 200 reply's JSON must be for the response path to judge it: a JSON object, or for
    # a reply that is an array of chunks (Gemini's stream without ``alt=sse``), an array. Any
    # other reply is relayed as it came.
    reply_types: tuple[type, ...]
    # The tool calls a reply proposes, in order, one tuple per alternative answer (chat
    # ``choices`` when ``n > 1``; one for protocols without alternatives).
    proposed_calls: Callable[[Reply], list[tuple[ToolCall, ...]]]
    # (reply, keep): alternative ``i`` keeps only its first ``keep[i]`` calls (one left without
    # calls ends as a plain answer).
    keep_calls: Callable[[Reply, Sequence[int]], Reply]
    # What the (first) answer says; None when unreadable.
    answer: Callable[[Reply], Answer | None]
    # (reply, text): ``text`` (and a blank line) before the answer's own text.
    prepend_text: Callable[[Reply, str], Reply]
    # The output tokens the upstream reported for one answer (a JSON reply or a complete event
    # stream, as the upstream sent it); None when it reported none.
    output_tokens: Callable[[bytes], int | None]
    # (reply, written): a reply the gateway wrote itself (``Authored.termination_reply``) in
    # the shape ``reply`` came in, for a protocol whose upstream answers one request in more
    # than one shape (Gemini's stream as a JSON array); the rest have one: ``written``.
    like: Callable[[Any, Any], Any] = _as_written
    # (reply, call): the (first) answer ending with ``call`` after its text, as the model would
    # have called it: the run's end for an agent that ends by an action. None: the protocol's
    # answers stay text.
    with_call: Callable[[Reply, ToolCall], Reply] | None = None
