"""The canonical trace: conversations turned into tool events that detectors read."""

from gateway.trace.builder import build_trace, proposed_events, run_start
from gateway.trace.model import (
    OWN_TEXT_MARKER,
    VETO_MARKER,
    Conversation,
    Status,
    ToolCall,
    ToolEvent,
    Trace,
    Turn,
)
from gateway.trace.normalize import canonical_args, normalize_result, text_hash
from gateway.trace.pairing import is_genuine_user
from gateway.trace.settings import TraceSettings

__all__ = [
    "OWN_TEXT_MARKER",
    "VETO_MARKER",
    "Conversation",
    "Status",
    "ToolCall",
    "ToolEvent",
    "Trace",
    "TraceSettings",
    "Turn",
    "build_trace",
    "canonical_args",
    "is_genuine_user",
    "normalize_result",
    "proposed_events",
    "run_start",
    "text_hash",
]
