"""A Messages event stream read back into the ``message`` it carries (the SDK's accumulation).

The gateway keeps a thread's conversation as the client saw it, and a streamed reply reaches
the client as events: this rebuilds the reply from the events the client got. Unreadable
events are skipped; nothing here raises. Hence also the Messages ``Streams`` role: a thread's
stream goes through the filter that keeps what it relays.
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.adapters import model_named
from gateway.protocols.anthropic.answers import stream_answer, stream_prepend_text
from gateway.protocols.anthropic.stream import ToolUseFilter
from gateway.protocols.anthropic.thread import thread_of
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.roles.streams import Streams
from gateway.protocols.sse import json_events
from gateway.wire import codec

# Blocks whose input arrives as ``input_json_delta`` text, parsed once the block stops.
_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use", "mcp_tool_use"})
_APPENDED = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}


def message(stream: bytes) -> dict[str, Any] | None:
    """The message ``stream`` carries, or None when it opens with none (an error stream)."""
    out: dict[str, Any] | None = None
    blocks: list[dict[str, Any]] = []
    inputs: dict[int, list[str]] = {}
    for _raw, data in json_events(stream):
        if data is None:
            continue
        kind = data.get("type")
        if kind == "message_start" and isinstance(data.get("message"), dict):
            out = dict(data["message"])
        elif kind == "content_block_start" and isinstance(data.get("content_block"), dict):
            block = dict(data["content_block"])
            if _kind(block) in _INPUT_BLOCKS:
                inputs[len(blocks)] = []
            blocks.append(block)
        elif kind == "content_block_delta" and blocks:
            _apply(blocks[-1], data.get("delta"), inputs.get(len(blocks) - 1))
        elif kind == "content_block_stop" and blocks and (parts := inputs.pop(len(blocks) - 1, None)) is not None:
            blocks[-1]["input"] = _parsed("".join(parts))
        elif kind == "message_delta" and out is not None and isinstance(data.get("delta"), dict):
            out.update({k: v for k, v in data["delta"].items() if k in ("stop_reason", "stop_sequence")})
    if out is None:
        return None
    out["content"] = blocks
    return out


def _kind(value: dict[str, Any]) -> str | None:
    """Its ``type`` when a string; anything else is no kind (never a key to look up)."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def _apply(block: dict[str, Any], delta: Any, input_parts: list[str] | None) -> None:
    if not isinstance(delta, dict):
        return
    kind = _kind(delta)
    if kind == "input_json_delta" and input_parts is not None and isinstance(delta.get("partial_json"), str):
        input_parts.append(delta["partial_json"])
    elif kind in _APPENDED:
        field = _APPENDED[kind]
        value = delta.get(field)
        if isinstance(value, str):
            block[field] = (block.get(field) or "") + value if field != "signature" else value


def _parsed(text: str) -> Any:
    if not text.strip():
        return {}
    try:
        return codec.loads(text)
    except codec.DecodeError:
        return {}


class Recording(ToolUseFilter):
    """The tool_use filter that also keeps what it relays, so the reply the client got can be
    remembered (a thread's next request continues it): ``reply``. (``cut`` writes through
    ``feed``, so what it closes is kept there.)"""

    def __init__(self, judge: Judge, model: str = "", options: StreamOptions | None = None) -> None:
        super().__init__(judge, model=model, options=options)
        self._relayed = bytearray()

    def _kept(self, out: list[bytes]) -> list[bytes]:
        for chunk in out:
            self._relayed += chunk
        return out

    def feed(self, data: bytes) -> list[bytes]:
        return self._kept(super().feed(data))

    def end_upstream(self) -> list[bytes]:
        return self._kept(super().end_upstream())

    def terminate(self, text: str, model: str | None = None) -> list[bytes]:
        return self._kept(super().terminate(text, model))

    def final(self) -> list[bytes]:
        return self._kept(super().final())

    @property
    def reply(self) -> dict[str, Any] | None:
        return message(bytes(self._relayed))


def stream_filter(judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None) -> ToolUseFilter:
    """A thread's reply is remembered, so its filter keeps what it relays (``Recording``)."""
    if thread_of(payload) is not None:
        return Recording(judge, model=model_named(payload), options=options)
    return ToolUseFilter(judge, model=model_named(payload), options=options)


STREAMS = Streams(filter=stream_filter, answer=stream_answer, prepend_text=stream_prepend_text)
