"""``Authored``: the replies the gateway writes itself (termination, errors).

Rule: each is in the exact shape the protocol's official SDK accepts, so a client reads the
gateway's answer like the upstream's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class ErrorBody(Protocol):
    """(message, type, code=None): an error in the protocol's own error shape."""

    def __call__(self, message: str, type: str, code: str | None = None, /) -> dict[str, Any]: ...


@dataclass(frozen=True, slots=True)
class Authored:
    # (text, payload): a complete, valid non-streaming reply whose only content is ``text``.
    termination_reply: Callable[[str, dict[str, Any]], Any]
    # (text, payload): the same as a complete, valid event stream.
    termination_stream: Callable[[str, dict[str, Any]], list[bytes]]
    error_body: ErrorBody
    # ``error_body``'s result as one event of the protocol's stream (an error mid-stream).
    error_event: Callable[[dict[str, Any]], bytes]
