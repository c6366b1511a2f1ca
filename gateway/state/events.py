"""The recent-events log the operator console reads: a bounded, append-only log of entries, each
with an optional detail (a run's timeline at that moment) fetched separately.

Entries are small (one audit event each) and read often: the console's feed polls the newest
of them. Details are large (bounded by their writer) and read one at a time, when an operator
opens a run. Both are bounded in count (``keep``, the writer's choice) and, in memory, in total
bytes; Redis keeps them in two streams trimmed to ``keep`` entries (``XADD MAXLEN``), shared by
every replica and worker.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

DEFAULT_MAX_BYTES = 16 * 1024 * 1024  # memory: entries and details together, whatever ``keep`` says


@dataclass(frozen=True, slots=True)
class LoggedEvent:
    id: str  # increasing: newer entries have greater ids (a feed's cursor)
    entry: bytes
    detail: str | None  # the reference ``event_detail`` takes; None: the entry has none


class EventRing:
    """The in-memory log: the newest ``keep`` entries within ``max_bytes``, oldest dropped first."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self._next = 0
        self._items: OrderedDict[str, tuple[bytes, bytes | None]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, entry: bytes, detail: bytes | None, keep: int) -> str:
        self._next += 1
        key = f"{self._next}-0"  # the shape of a Redis stream id, so cursors look alike
        self._items[key] = (entry, detail)
        self.size += _bytes(entry, detail)
        while self._items and (len(self._items) > keep or self.size > self.max_bytes):
            _, (old, old_detail) = self._items.popitem(last=False)
            self.size -= _bytes(old, old_detail)
        return key

    def recent(self, count: int) -> list[LoggedEvent]:
        """The newest ``count`` entries, newest first."""
        out: list[LoggedEvent] = []
        for key in reversed(self._items):
            if len(out) >= count:
                break
            entry, detail = self._items[key]
            out.append(LoggedEvent(key, entry, key if detail is not None else None))
        return out

    def detail(self, ref: str) -> bytes | None:
        found = self._items.get(ref)
        return found[1] if found is not None else None

    def clear(self) -> None:
        self._items.clear()
        self.size = 0


def _bytes(entry: bytes, detail: bytes | None) -> int:
    return len(entry) + (len(detail) if detail is not None else 0)
