"""A small bounded memo for per-text work that every request repeats.

Each request carries the whole conversation again, so the same argument and result texts are
canonicalized and normalized over and over. Their outcome depends only on the text and the
settings, so the settings instance owns one memo: a new policy brings a fresh memo, and
entries can never go stale. Two generations instead of an LRU list: lookups stay one dict
probe, and a concurrent reader never sees a half evicted structure (each dict operation is
atomic under the GIL).

Bounded by entries and by bytes: the young generation rotates when it holds ``capacity``
entries or ``max_bytes / 2`` bytes of text, so the memo never holds more than ``2 * capacity``
entries or about ``max_bytes`` (plus one entry). A count alone is no bound: 4,096 distinct
256 KB ``write_file`` arguments are a gigabyte of canonical text.
"""

from __future__ import annotations

import weakref
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")
# A text as a memo key: itself when short, else its length and digest (never pins a big string).
TextKey = str | tuple[int, bytes]

DEFAULT_MAX_BYTES = 16 * 1024 * 1024
_ALL: weakref.WeakSet[Memo[Any, Any]] = weakref.WeakSet()


def clear_all() -> None:
    """Forget every memo's entries (the process went idle: give the memory back)."""
    for memo in list(_ALL):
        memo.clear()


def text_bytes(key: Any, value: Any) -> int:
    """What an entry keeps alive, roughly: its strings (key and the value's fields) plus a
    fixed overhead for the objects around them."""
    size = 100 + (len(key) if isinstance(key, (str, bytes)) else 48)
    if isinstance(value, tuple):
        size += sum(len(v) for v in value if isinstance(v, (str, bytes)))
    elif isinstance(value, (str, bytes)):
        size += len(value)
    return size


class Memo(Generic[K, V]):
    __slots__ = ("__weakref__", "_old", "_old_bytes", "_young", "_young_bytes", "capacity", "max_bytes")

    def __init__(self, capacity: int, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        _ALL.add(self)
        self.capacity = capacity
        self.max_bytes = max_bytes
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}
        self._young_bytes = 0
        self._old_bytes = 0

    def get(self, key: K) -> V | None:
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:  # still in use: keep it across the next rotation
                self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        size = text_bytes(key, value)
        if size > self.max_bytes // 2:
            return  # would push out everything else for one text
        if len(self._young) >= self.capacity or self._young_bytes + size > self.max_bytes // 2:
            self._old, self._young = self._young, {}
            self._old_bytes, self._young_bytes = self._young_bytes, 0
        if key not in self._young:
            self._young_bytes += size
        self._young[key] = value

    def clear(self) -> None:
        self._young, self._old = {}, {}
        self._young_bytes = self._old_bytes = 0

    @property
    def bytes(self) -> int:
        return self._young_bytes + self._old_bytes

    def __len__(self) -> int:
        return len(self._young) + len(self._old)
