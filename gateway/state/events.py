"""The recent-events log the operator console reads: a bounded, append-only log of entries, each
with an optional detail (a run's timeline at that moment) fetched separately.

Entries are small (one audit event each) and read often: the console's feed polls for the
entries newer than the last one it has (a cursor, ``after``), so a poll costs what is new, never
what is kept. Details are large (bounded by their writer) and read one at a time, when an operator
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

    def recent(self, count: int, after: str = "") -> list[LoggedEvent]:
        """The newest ``count`` entries, newest first; with ``after`` (an id this log gave), only
        those newer than it: the walk stops at the cursor, so it costs the new entries alone."""
        floor = _serial(after)
        out: list[LoggedEvent] = []
        for key in reversed(self._items):
            if len(out) >= count or _serial(key) <= floor:
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


def _serial(ref: str) -> int:
    """The number of a ``<n>-0`` id; 0 (before everything) for "" or an id of another log."""
    head, _, tail = ref.partition("-")
    return int(head) if head.isdigit() and tail == "0" else 0


class Revocations:
    """Console sign-ins ended before their cookie expired (``revoke``), each remembered until
    that cookie would have expired anyway; at most ``limit``, the soonest to expire dropped first
    (only a signed-in user can add one, by signing out)."""

    def __init__(self, limit: int = 100_000) -> None:
        self.limit = limit
        self._until: dict[str, float] = {}

    def revoke(self, ref: str, until: float, now: float) -> None:
        if len(self._until) >= self.limit:
            self._until = {k: t for k, t in self._until.items() if t > now}
            while len(self._until) >= self.limit:
                del self._until[min(self._until, key=self._until.__getitem__)]
        self._until[ref] = until

    def revoked(self, ref: str, now: float) -> bool:
        return self._until.get(ref, 0.0) > now


class RunLabels:
    """Operators' labels of console runs, at most ``limit``: operators label by hand, so the
    bound is for a runaway script, and a new run's label over it is refused (``save`` answers
    False), never an older one dropped."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._by_run: dict[str, bytes] = {}

    def save(self, run: str, entry: bytes) -> bool:
        if run not in self._by_run and len(self._by_run) >= self.limit:
            return False
        self._by_run[run] = entry
        return True

    def all(self) -> dict[str, bytes]:
        return dict(self._by_run)


def _bytes(entry: bytes, detail: bytes | None) -> int:
    return len(entry) + (len(detail) if detail is not None else 0)
