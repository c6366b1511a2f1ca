"""Gemini replies (``GenerateContentResponse``): read, amended, written.

A reply is ``{"candidates": [{"content": {"role": "model", "parts": [...]}, "finishReason",
"index"}], "usageMetadata": {...}, "modelVersion", "responseId"}``; each candidate is an
alternative answer. Errors are Google's: ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols.base import Answer
from gateway.protocols.gemini.parse import calls_of, parts_of, text_of
from gateway.protocols.gemini.tokens import output_tokens
from gateway.protocols.roles.replies import Replies
from gateway.trace.model import ToolCall

# The gateway's error types (OpenAI's names, the pipeline's vocabulary) as Google's HTTP code and
# status; ``code`` names the few the type does not tell apart.
_STATUS = {
    "invalid_request_error": (400, "INVALID_ARGUMENT"),
    "authentication_error": (401, "UNAUTHENTICATED"),
    "permission_error": (403, "PERMISSION_DENIED"),
    "not_found_error": (404, "NOT_FOUND"),
    "rate_limit_error": (429, "RESOURCE_EXHAUSTED"),
    "upstream_error": (502, "UNAVAILABLE"),
}
_CODES = {
    "request_too_large": (413, "INVALID_ARGUMENT"),
    "request_timeout": (408, "DEADLINE_EXCEEDED"),
    "upstream_timeout": (504, "DEADLINE_EXCEEDED"),
    "loop_detected": (422, "FAILED_PRECONDITION"),  # the policy's status (interventions.terminate.status)
}


def candidates(reply: Any) -> list[dict[str, Any]]:
    found = reply.get("candidates") if isinstance(reply, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def merged(chunks: list[Any]) -> dict[str, Any]:
    """A reply streamed as a JSON array (``streamGenerateContent`` without ``alt=sse``) as one
    reply: its first candidate's parts in order, adjacent text pieces joined, and the last
    chunk's other fields (finish reason, usage)."""
    parts: list[dict[str, Any]] = []
    for chunk in chunks:
        for part in (parts_of(c.get("content")) for c in candidates(chunk)[:1]):
            for piece in part:
                if parts and _joins(parts[-1], piece):
                    parts[-1] = {**parts[-1], "text": parts[-1]["text"] + piece["text"]}
                else:
                    parts.append(piece)
    last = chunks[-1] if chunks and isinstance(chunks[-1], dict) else {}
    first = (candidates(last)[:1] or [{}])[0]
    return {**last, "candidates": [{**first, "content": {"role": "model", "parts": parts}}]}


def whole(reply: Any) -> dict[str, Any]:
    """A reply as one: an array stream's chunks merged, any other reply as it is."""
    return merged(reply) if isinstance(reply, list) else reply


def shaped(original: Any, edited: dict[str, Any]) -> Any:
    """``edited`` in the shape ``original`` came in: an array stream's is a one-element array."""
    return [edited] if isinstance(original, list) else edited


def _joins(before: dict[str, Any], piece: dict[str, Any]) -> bool:
    """Two text pieces of one streamed text (both plain, or both thoughts)."""
    return (
        set(before) <= {"text", "thought"}
        and set(piece) <= {"text", "thought"}
        and isinstance(before.get("text"), str)
        and isinstance(piece.get("text"), str)
        and before.get("thought") == piece.get("thought")
    )


# A reply here is a JSON object, or an array stream's chunks (read merged, ``whole``; an edited
# one goes back in the shape it came in, ``shaped``).


def proposed_calls(reply: Any) -> list[tuple[ToolCall, ...]]:
    """One tuple per candidate (at least one: a reply without candidates proposes nothing)."""
    found = [tuple(calls_of(parts_of(c.get("content")), f"r{n}")) for n, c in enumerate(candidates(whole(reply)))]
    return found or [()]


def keep_calls(reply: Any, keep: Sequence[int]) -> Any:
    one, out = whole(reply), []
    for n, candidate in enumerate(candidates(one)):
        limit = keep[n] if n < len(keep) else None
        out.append(candidate if limit is None else _keep(candidate, limit))
    return shaped(reply, {**one, "candidates": out})


def _keep(candidate: dict[str, Any], limit: int) -> dict[str, Any]:
    parts, seen = [], 0
    for part in parts_of(candidate.get("content")):
        if isinstance(part.get("functionCall"), dict):
            seen += 1
            if seen > limit:
                continue
        parts.append(part)
    if seen <= limit:
        return candidate
    return {**candidate, "content": {**candidate.get("content", {}), "parts": parts}}


def answer(reply: Any) -> Answer | None:
    found = candidates(whole(reply))
    if not found:
        return None
    content = found[0].get("content")
    return Answer(any(True for _ in calls_of(parts_of(content), 0)), text_of(content))


def prepend_text(reply: Any, text: str) -> Any:
    one = whole(reply)
    found = candidates(one)
    if not found:
        return shaped(reply, one)
    first = found[0]
    content = content_value if isinstance(content_value := first.get("content"), dict) else {"role": "model"}
    content = {**content, "parts": [{"text": text + "\n\n"}, *parts_of(content)]}
    return shaped(reply, {**one, "candidates": [{**first, "content": content}, *found[1:]]})


def termination(text: str, model: str) -> dict[str, Any]:
    """A complete reply whose only content is ``text``: what the SDKs read as a final answer."""
    reply: dict[str, Any] = {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 0, "candidatesTokenCount": 0, "totalTokenCount": 0},
    }
    if model:
        reply["modelVersion"] = model
    return reply


def error_body(message: str, type: str, code: str | None = None) -> dict[str, Any]:
    status, name = _CODES.get(code or "") or _STATUS.get(type, (400, "INVALID_ARGUMENT"))
    return {"error": {"code": status, "message": message, "status": name}}


def like(reply: Any, written: Any) -> Any:
    """A reply the gateway wrote, in the shape the upstream's ``reply`` came in."""
    return shaped(reply, whole(written))


# A reply is a JSON object, or a stream's chunks as one JSON array (``:streamGenerateContent``
# without ``alt=sse``): either is judged, whichever the request asked for.
REPLIES = Replies(
    reply_types=(dict, list),
    proposed_calls=proposed_calls,
    keep_calls=keep_calls,
    answer=answer,
    prepend_text=prepend_text,
    output_tokens=output_tokens,
    like=like,
)
