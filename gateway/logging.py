"""structlog setup: JSON lines by default, secrets scrubbed before anything is rendered.

A log call never raises for what a line carries: client and upstream text may hold lone
surrogates (which UTF-8, hence orjson and a terminal, refuse) or be megabytes long. Such a line
is written with the unsafe parts escaped and long values capped (``gateway.untrusted``); a
raising log call would otherwise abort the request path it sits on, and the guard fail open."""

from __future__ import annotations

import logging
import sys
from typing import Any

import structlog
from structlog.typing import EventDict

from gateway import untrusted
from gateway.protocols.registry import SECRET_HEADERS, SECRET_QUERY

# Keys whose values must never reach a log line, whatever the caller passed: every header and
# query parameter a protocol carries a key in (``Declaration``), and the config's spelling.
_SECRET_KEYS = frozenset({"api_key", "proxy-authorization", *SECRET_HEADERS, *SECRET_QUERY})


def redact_secrets(_logger: Any, _method: str, event: EventDict) -> EventDict:
    for key, value in event.items():
        if key.lower() in _SECRET_KEYS:
            event[key] = "[redacted]"  # same key: the dict keeps its size while iterated
        elif isinstance(value, dict):
            event[key] = {k: "[redacted]" if str(k).lower() in _SECRET_KEYS else v for k, v in value.items()}
    return event


def _format_exc_info(logger: Any, method: str, event: EventDict) -> EventDict:
    """structlog's formatter, skipped for the lines that carry no exception (nearly all)."""
    return structlog.processors.format_exc_info(logger, method, event) if "exc_info" in event else event


def render_json(_logger: Any, _method: str, event: EventDict) -> bytes:
    return untrusted.dumps(event)


def clean_event(_logger: Any, _method: str, event: EventDict) -> EventDict:
    """For the console renderer, which writes text: every value made encodable and capped."""
    cleaned: EventDict = untrusted.clean(event)  # structlog's event is a dict: cleaned into a dict
    return cleaned


class SafeBytesLogger(structlog.BytesLogger):
    """A line that cannot be written (stderr closed, a broken pipe) is dropped, not raised into
    the request that logged it."""

    __slots__ = ()

    def msg(self, message: bytes) -> None:
        try:
            super().msg(message)
        except (OSError, ValueError):
            pass

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


def _stderr_bytes(*_args: Any) -> SafeBytesLogger:
    return SafeBytesLogger(sys.stderr.buffer)


def configure_logging(fmt: str = "json", level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    if fmt == "console":
        renderers: list[Any] = [clean_event, structlog.dev.ConsoleRenderer(colors=False)]
        factory: Any = structlog.PrintLoggerFactory(sys.stderr)
    else:
        renderers = [render_json]
        factory = _stderr_bytes
    structlog.configure(
        processors=[*shared, _format_exc_info, *renderers],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
