"""The agents' logs as they lie on disk, read into runs (``gateway.replay.run``).

One module per format; each knows its client's files and nothing else. A source's format is the
first whose ``claims`` accepts it, in the order below (request bodies last: they are the most
general shape), or the one ``--format`` names.

These readers, and only these outside ``gateway.protocols``, spell wire keys: the clients wrote
their protocol's items into their logs as they sent them, and a reader hands them on unchanged
where it can.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial

from gateway.replay.logs import bodies, claude_code, cline, codex, gemini_cli, openhands
from gateway.replay.logs.base import Format, LogError, Source
from gateway.replay.run import Run

__all__ = ["FORMATS", "Format", "LogError", "Source", "format_of", "read_source", "runs_in"]

_DETECTED = (claude_code.FORMAT, codex.FORMAT, gemini_cli.FORMAT, cline.FORMAT, openhands.FORMAT, bodies.FORMAT)
# ``--format`` also names the request-body protocols, to read every body as one of them.
_FORCED = (
    Format(
        "chat",
        "chat-completions request bodies",
        bodies.FORMAT.where,
        bodies.claims,
        partial(bodies.read, protocol="chat"),
    ),
    Format(
        "messages",
        "Anthropic Messages request bodies",
        bodies.FORMAT.where,
        bodies.claims,
        partial(bodies.read, protocol="anthropic"),
    ),
)
FORMATS = {f.name: f for f in (*_DETECTED, *_FORCED)}


def format_of(source: Source) -> Format | None:
    """The format whose logs ``source`` is one of; None when no format claims it."""
    for fmt in _DETECTED:
        try:
            if fmt.claims(source):
                return fmt
        except LogError:
            raise
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            continue  # a shape no format expected: the next one looks
    return None


def read_source(source: Source, forced: str | None = None) -> list[Run]:
    """The runs in ``source``; ``LogError`` with the reason when it holds none that can be read."""
    return list(runs_in(source, forced))


def runs_in(source: Source, forced: str | None = None) -> Iterator[Run]:
    """``read_source`` one run at a time; the error may come after runs were read."""
    fmt = FORMATS[forced] if forced else format_of(source)
    if fmt is None:
        raise LogError("not a session log of a format replay reads")
    try:
        yield from fmt.read(source)
    except LogError:
        raise
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError) as exc:
        raise LogError(f"unreadable as {fmt.name}: {type(exc).__name__}: {exc}") from None
