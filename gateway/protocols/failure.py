"""Why a client stream ends with an error instead of the model's end: the protocol's stream
filter writes its terminal error events from this (``StreamDriver.fail``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StreamFailure:
    message: str
    code: str  # upstream_error | upstream_timeout | upstream_truncated | loop_detected
    # The client should not retry: the run was ended on purpose (a stopped loop). Protocols
    # whose clients retry some errors pick a code those clients treat as final.
    final: bool = False


_KINDS = {
    "upstream_timeout": "stopped answering",
    "upstream_invalid_response": "answered with a body that is not an event stream",
}


def upstream_failure(exc: BaseException | None) -> StreamFailure:
    """An upstream that broke off (``exc``) or ended without its terminal event (None)."""
    if exc is None:
        return StreamFailure("The upstream model provider ended the stream before its end.", "upstream_truncated")
    code = getattr(exc, "code", "upstream_error")
    kind = _KINDS.get(code, "broke off the stream")
    return StreamFailure(f"The upstream model provider {kind}.", code)
