"""Stream filters as the tests build them: with the fast paths (what the gateway serves by
default) or the general reader alone, as the ``fast_paths`` fixture of each protocol's tests
says. Both must give the client the same bytes, so every stream test runs both ways."""

from __future__ import annotations

from typing import Any

from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.base import StreamOptions
from gateway.protocols.chat.fast import FastToolCallFilter
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.protocols.responses.stream import ResponsesStreamFilter

FAST = True  # set by the fixture for the test running


def options(keepalive_s: float | None = 15.0, hold_text: bool = False) -> StreamOptions:
    return StreamOptions(keepalive_s=keepalive_s, fast_paths=FAST, hold_text=hold_text)


def chat_filter(judge: Any, keepalive_s: float | None = 15.0, **kwargs: Any) -> ToolCallFilter:
    reader = FastToolCallFilter if FAST else ToolCallFilter
    return reader(judge, options=options(keepalive_s), **kwargs)


def anthropic_filter(judge: Any, keepalive_s: float | None = 15.0, **kwargs: Any) -> ToolUseFilter:
    return ToolUseFilter(judge, options=options(keepalive_s), **kwargs)


def responses_filter(
    judge: Any, keepalive_s: float | None = 15.0, hold_text: bool = False, **kwargs: Any
) -> ResponsesStreamFilter:
    return ResponsesStreamFilter(judge, options(keepalive_s, hold_text), **kwargs)
