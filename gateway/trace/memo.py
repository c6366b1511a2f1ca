"""A small bounded memo for per-text work that every request repeats.

Each request carries the whole conversation again, so the same argument and result texts are
canonicalized and normalized over and over. Their outcome depends only on the text and the
settings, so the settings instance owns one memo: a new policy brings a fresh memo, and
entries can never go stale. Two generations instead of an LRU list: lookups stay one dict
probe, the size is bounded by ``2 * capacity``, and a concurrent reader never sees a half
evicted structure (each dict operation is atomic under the GIL).
"""

from __future__ import annotations

from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Memo(Generic[K, V]):
    __slots__ = ("capacity", "_young", "_old")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._young: dict[K, V] = {}
        self._old: dict[K, V] = {}

    def get(self, key: K) -> V | None:
        value = self._young.get(key)
        if value is None:
            value = self._old.get(key)
            if value is not None:  # still in use: keep it across the next rotation
                self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        if len(self._young) >= self.capacity:
            self._old, self._young = self._young, {}
        self._young[key] = value

    def __len__(self) -> int:
        return len(self._young) + len(self._old)
