"""``Streams``: an upstream event stream relayed with each tool call held until judged.

Rule: what the client gets is the upstream's bytes, untouched, except what a decision left out
or added; a complete stream can be read for its answer and amended as a whole.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gateway.protocols.base import Answer, Judge, StreamFilter, StreamOptions


@dataclass(frozen=True, slots=True)
class Streams:
    # (judge, payload, options): a filter for one client stream (``StreamFilter``); options
    # None: the defaults.
    filter: Callable[[Judge, dict[str, Any], StreamOptions | None], StreamFilter]
    # What a complete client-bound stream answers; None when it holds an error or nothing readable.
    answer: Callable[[bytes], Answer | None]
    # (stream, text): the stream with ``text`` (and a blank line) before the answer's own text.
    prepend_text: Callable[[bytes, str], bytes]
