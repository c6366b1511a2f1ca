"""What every log format shares: a source read once, the format's description, its errors.

A ``Source`` is one file (or one folder of event files) as found on disk, read at most once and
parsed on demand: as one JSON document, or as JSON lines. A ``Format`` says whether a source is
one of its logs (``claims``: a look at its name and first record, never a full read of another
format) and turns it into runs (``read``), raising ``LogError`` with the reason when it cannot.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from gateway.replay.run import Run
from gateway.wire import codec

_UNSET: Any = object()
COMPRESSED = (".gz", ".xz", ".bz2")


class LogError(Exception):
    """A log that cannot be read; ``str()`` is the reason, for the operator."""


class Source:
    """A file, or a folder whose files are one log (OpenHands' ``events/``), with the path a
    label names it by: relative to the argument it was found under."""

    def __init__(self, path: Path, rel: str, explicit: bool = True) -> None:
        self.path, self.rel, self.explicit = path, rel, explicit
        self._data: bytes | None = None
        self._document: Any = _UNSET
        self._records: list[tuple[int, Any]] | None = None
        self.bad_lines: list[int] = []  # JSON lines that did not parse

    @property
    def is_dir(self) -> bool:
        return self.path.is_dir()

    @property
    def name(self) -> str:
        """The file's name without a compression suffix (``runs.jsonl.xz`` is ``runs.jsonl``)."""
        name = self.path.name
        return name.rsplit(".", 1)[0] if name.endswith(COMPRESSED) else name

    @property
    def data(self) -> bytes:
        if self._data is None:
            try:
                self._data = _read(self.path)
            except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
                raise LogError(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
        return self._data

    def document(self) -> Any:
        """The file as one JSON value; None when it is not one (JSON lines, or broken). Only a
        file of one line gets the fallback parser: JSON lines are read a line at a time, never
        decoded whole."""
        if self._document is _UNSET:
            self._document = None
            body = self.data.strip()
            try:
                self._document = orjson.loads(body) if body else None
            except orjson.JSONDecodeError:
                if b"\n" not in body:
                    try:
                        self._document = codec.loads(body)
                    except codec.DecodeError:
                        pass
        return self._document

    def records(self) -> list[tuple[int, Any]]:
        """(line number, value) of each JSON line; a file holding one object is its one record,
        a JSON list is none (a document). Lines that do not parse are left out and counted."""
        if self._records is None:
            self._records = list(self.stream())
        return self._records

    def stream(self) -> Iterator[tuple[int, Any]]:
        """``records()`` one at a time, none kept: a file of thousands of runs costs one run's
        memory at a time."""
        if self._records is not None:
            yield from self._records
            return
        document = self.document()
        if isinstance(document, dict):
            yield 1, document
        elif document is None:
            yield from self._lines(count_bad=True)

    def head(self, count: int) -> list[tuple[int, Any]]:
        """The first ``count`` records, parsing no further: what ``Format.claims`` looks at."""
        if self._records is not None or self.document() is not None:
            return self.records()[:count]
        return list(islice(self._lines(count_bad=False), count))

    def _lines(self, count_bad: bool) -> Iterator[tuple[int, Any]]:
        for number, line in enumerate(io.BytesIO(self.data), 1):
            if not line.strip():
                continue
            try:
                yield number, codec.loads(line)
            except codec.DecodeError:
                if count_bad:
                    self.bad_lines.append(number)

    def first(self) -> Any:
        """The first record of JSON lines, or the document."""
        found = self.head(1)
        return found[0][1] if found else self.document()

    def dicts(self) -> list[tuple[int, dict[str, Any]]]:
        return [(n, r) for n, r in self.records() if isinstance(r, dict)]

    def head_dicts(self, count: int) -> list[dict[str, Any]]:
        return [r for _, r in self.head(count) if isinstance(r, dict)]


def _read(path: Path) -> bytes:
    """The file's bytes, decompressed when its name says it is (archived logs stay archived)."""
    if path.suffix == ".gz":
        return gzip.decompress(path.read_bytes())
    if path.suffix == ".xz":
        return lzma.decompress(path.read_bytes())
    if path.suffix == ".bz2":
        return bz2.decompress(path.read_bytes())
    return path.read_bytes()


@dataclass(frozen=True, slots=True)
class Format:
    name: str  # as ``--format`` and the JSON output spell it
    client: str  # the client that writes it, for people
    where: str  # where the client keeps these logs (the docs page lists them)
    claims: Callable[[Source], bool]
    read: Callable[[Source], Iterable[Run]]  # may yield as it reads (one run's memory at a time)


def text_of(value: Any) -> str:
    """The text of a string, of a list of text parts (``{"text": ...}``), or ""."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def single(source: Source, fmt: str, segments: list[Any], **fields: Any) -> list[Run]:
    """The one run of a log that holds one (``segments`` empty: no conversation in it)."""
    if not segments or not any(s.messages for s in segments):
        raise LogError("no conversation in it")
    return [Run(source.rel, fields.pop("id", None) or source.rel, fmt, segments, file=str(source.path), **fields)]
