"""How conversations become traces: scope, argument canonicalization, result normalization.

Validated once when a policy loads; the compiled patterns live on the instance so the hot path
never compiles a regex.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr

# Keys whose values change on every call without meaning progress (seed 002: pid, duration,
# session id, cwd, message/file ids, timestamps). Compared case-insensitively.
DEFAULT_VOLATILE_KEYS: tuple[str, ...] = (
    "pid", "duration", "duration_ms", "durationms", "elapsed", "elapsed_ms", "took", "took_ms",
    "cwd", "session_id", "sessionid", "message_id", "messageid", "file_id", "fileid",
    "request_id", "requestid", "timestamp", "ts", "time", "created", "created_at", "updated_at",
)
# Text fragments that differ between otherwise identical results.
DEFAULT_VOLATILE_PATTERNS: tuple[str, ...] = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?",  # ISO timestamps
    r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b",  # UUIDs
    r"\b(0x)?[0-9a-fA-F]{16,}\b",  # long hex ids
    r"\b\d+(\.\d+)?\s*(ms|milliseconds?|s|secs?|seconds?|minutes?|mins?)( ago)?\b",  # durations
)
DEFAULT_ERROR_PATTERNS: tuple[str, ...] = (
    r"^\s*(error|exception|fatal)\b",
    r"\bTraceback \(most recent call last\)",
    r"\b(exit|return) (code|status)[:= ]+[1-9]\d*",
    r'"(is_error|isError|error)"\s*:\s*(true|"[^"]+")',
)
DEFAULT_UNKNOWN_TOOL_PATTERNS: tuple[str, ...] = (
    r"\b(unknown|unrecognized|invalid|undefined) (tool|function)\b",
    r"\b(tool|function) .{0,60}\b(not found|does not exist|is not available)\b",
)


class TraceSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    scope: Literal["run", "conversation"] = "run"
    ignore_arg_keys: frozenset[str] = frozenset({"task_progress"})  # Cline's progress field
    volatile_keys: tuple[str, ...] = DEFAULT_VOLATILE_KEYS
    volatile_patterns: tuple[str, ...] = DEFAULT_VOLATILE_PATTERNS
    error_patterns: tuple[str, ...] = DEFAULT_ERROR_PATTERNS
    unknown_tool_patterns: tuple[str, ...] = DEFAULT_UNKNOWN_TOOL_PATTERNS

    _volatile_keys: frozenset[str] = PrivateAttr()
    _volatile_re: re.Pattern[str] | None = PrivateAttr()
    _error_re: re.Pattern[str] | None = PrivateAttr()
    _unknown_re: re.Pattern[str] | None = PrivateAttr()

    def model_post_init(self, _context: object) -> None:
        self._volatile_keys = frozenset(k.lower() for k in self.volatile_keys)
        self._volatile_re = _union(self.volatile_patterns, 0)
        self._error_re = _union(self.error_patterns, re.IGNORECASE | re.MULTILINE)
        self._unknown_re = _union(self.unknown_tool_patterns, re.IGNORECASE)

    @property
    def volatile_key_set(self) -> frozenset[str]:
        return self._volatile_keys

    @property
    def volatile_re(self) -> re.Pattern[str] | None:
        return self._volatile_re

    @property
    def error_re(self) -> re.Pattern[str] | None:
        return self._error_re

    @property
    def unknown_tool_re(self) -> re.Pattern[str] | None:
        return self._unknown_re


def _union(patterns: tuple[str, ...], flags: int) -> re.Pattern[str] | None:
    """One alternation regex per list: a single scan per result instead of one per pattern."""
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{p})" for p in patterns), flags)
