"""Appends each event as one JSON line to a file (for log shippers and ad-hoc jq)."""

from __future__ import annotations

from pathlib import Path
from typing import IO

from gateway import untrusted
from gateway.audit.events import AuditEvent


class JsonlSink:
    name = "jsonl"

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.written = 0
        self._file: IO[bytes] | None = None

    def start(self) -> None:
        self._open()  # a bad path or permission shows up in the startup log, not mid-traffic

    def emit(self, event: AuditEvent) -> None:
        # Written inline: one small append to the page cache is microseconds, cheaper than
        # handing it to a thread. Flushed per event so a crash loses nothing and `tail -f` works.
        file = self._file or self._open()
        file.write(untrusted.dumps(event.to_dict()) + b"\n")
        file.flush()
        self.written += 1

    def stop(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _open(self) -> IO[bytes]:
        if self._file is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "ab")  # noqa: SIM115 - kept open for the process's life
        return self._file
