"""structlog setup: JSON lines by default, secrets scrubbed before anything is rendered."""

from __future__ import annotations

import logging
import sys
from typing import Any

import orjson
import structlog

# Keys whose values must never reach a log line, whatever the caller passed.
_SECRET_KEYS = frozenset({"authorization", "api_key", "api-key", "x-api-key", "proxy-authorization"})


def redact_secrets(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    for key, value in event.items():
        if key.lower() in _SECRET_KEYS:
            event[key] = "[redacted]"  # same key: the dict keeps its size while iterated
        elif isinstance(value, dict):
            event[key] = {k: "[redacted]" if str(k).lower() in _SECRET_KEYS else v for k, v in value.items()}
    return event


def _format_exc_info(logger: Any, method: str, event: dict[str, Any]) -> dict[str, Any]:
    """structlog's formatter, skipped for the lines that carry no exception (nearly all)."""
    return structlog.processors.format_exc_info(logger, method, event) if "exc_info" in event else event


def configure_logging(fmt: str = "json", level: str = "info") -> None:
    numeric = logging.getLevelName(level.upper())
    shared: list[Any] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    if fmt == "console":
        renderer: Any = structlog.dev.ConsoleRenderer(colors=False)
        factory: Any = structlog.PrintLoggerFactory(sys.stderr)
    else:
        renderer = structlog.processors.JSONRenderer(serializer=orjson.dumps)
        factory = structlog.BytesLoggerFactory(sys.stderr.buffer)
    structlog.configure(
        processors=[*shared, _format_exc_info, renderer],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=factory,
        cache_logger_on_first_use=True,
    )
