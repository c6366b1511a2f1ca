"""Which filter relays a chat stream (``Streams.filter``), and the chat ``Streams`` role.

Several answers (``n > 1``) arrive interleaved and each is judged on its own (``ChoicesFilter``).
One answer takes the fast paths (``FastToolCallFilter``: bytes matched, not decoded) unless the
options turn them off or text must be held, which is read event by event (``ToolCallFilter``).
"""

from __future__ import annotations

from typing import Any

from gateway.protocols.adapters import model_named
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.chat.answers import stream_answer, stream_prepend_text
from gateway.protocols.chat.choices import ChoicesFilter
from gateway.protocols.chat.fast import FastToolCallFilter
from gateway.protocols.chat.stream import ToolCallFilter
from gateway.protocols.roles.streams import Streams


def stream_filter(
    judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
) -> ToolCallFilter | ChoicesFilter:
    n = payload.get("n")
    if type(n) is int and n > 1:  # several answers, interleaved: each one judged
        return ChoicesFilter(judge, model=model_named(payload), options=options, choices=n)
    # Held text is read event by event: the fast paths relay unread what it must hold.
    general = options is not None and (not options.fast_paths or options.hold_text)
    reader = ToolCallFilter if general else FastToolCallFilter
    return reader(judge, options=options, model=model_named(payload))


STREAMS = Streams(filter=stream_filter, answer=stream_answer, prepend_text=stream_prepend_text)
