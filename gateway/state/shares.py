"""Entries kept per tenant, so that one tenant's volume can evict only its own.

Every key a store keeps starts with the namespace of the client it belongs to
(``gateway.state.session.client_namespace``): ``t:<tenant hash>:`` for a configured tenant,
``c:<credential hash>:`` for a client key without one, ``k:<key hash>/`` for LiteLLM's sessions,
nothing for a client without a credential; a session key may carry its protocol's name first
(``responses:t:...``). ``tenant_of`` reads it back, so the stores need no tenant passed to them.

``Shares`` groups entries by that tenant, each group in least-recently-used order, and bounds
them twice:

- a tenant beyond its own cap (``tenant_limit``) drops its own oldest entries (``tenant_cap``);
- when all tenants together exceed the global ``limit``, the tenant holding the most drops its
  oldest (``fair_share``). A tenant holding less than ``limit`` divided by the number of tenants
  never holds the most, so it never loses an entry to another tenant's volume.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

V = TypeVar("V")
# What keeping a record costs beside its key and value (the entry, its tuple, the index): measured
# with tracemalloc at about 310 bytes for a 24-byte claim, so a budget in bytes is one in memory.
RECORD_OVERHEAD = 256
TENANT_CAP, FAIR_SHARE = "tenant_cap", "fair_share"  # why an entry was evicted


# A namespace (``t:<hash>:``, ``c:<hash>:``, LiteLLM's ``k:<hash>/``), after the protocol name a
# session key may start with (``responses:``: ``Declaration.session_prefix``). A protocol name has
# two letters or more; what a client names follows a one-letter source (``h:``, ``m:``, ``f:``), so
# no session of a client without a credential reads as a tenant's, whatever id it chooses.
_NAMESPACE = re.compile(r"(?:[a-z][a-z0-9_]+:)?(t:[^:]*:|c:[^:]*:|k:[^/]*/)")


def tenant_of(key: str) -> str:
    """The namespace ``key`` starts with ("" for a client without a credential)."""
    found = _NAMESPACE.match(key)
    return found.group(1) if found else ""


def record_weight(key: str, raw: bytes) -> int:
    """A chain record's or claim's share of a byte budget: its key, its value and the overhead."""
    return len(key) + len(raw) + RECORD_OVERHEAD


class Heaviest:
    """Weights by tenant, and which tenant weighs most: a max-heap whose outdated entries are
    skipped when met and dropped when they outnumber the tenants."""

    def __init__(self) -> None:
        self.weights: dict[str, int] = {}
        self._heap: list[tuple[int, str]] = []

    def add(self, tenant: str, delta: int) -> int:
        weight = self.weights.get(tenant, 0) + delta
        if weight > 0:
            self.weights[tenant] = weight
            heapq.heappush(self._heap, (-weight, tenant))
        else:
            self.weights.pop(tenant, None)
        if len(self._heap) > 2 * len(self.weights) + 64:
            self._heap = [(-w, t) for t, w in self.weights.items()]
            heapq.heapify(self._heap)
        return max(weight, 0)

    def top(self) -> str | None:
        while self._heap:
            weight, tenant = self._heap[0]
            if self.weights.get(tenant) == -weight:
                return tenant
            heapq.heappop(self._heap)
        return None

    def clear(self) -> None:
        self.weights.clear()
        self._heap.clear()


class Shares(Generic[V]):
    """Values by key, grouped by tenant, within a global and a per-tenant weight."""

    def __init__(self, limit: int, tenant_limit: int | None = None) -> None:
        self.limit = limit
        self.tenant_limit = min(tenant_limit or limit, limit)
        self.total = 0
        self.evicted: Counter[str] = Counter()  # by reason: TENANT_CAP, FAIR_SHARE
        self.held = Heaviest()
        self._groups: dict[str, OrderedDict[str, tuple[V, int]]] = {}

    def __len__(self) -> int:
        return sum(len(group) for group in self._groups.values())

    def get(self, key: str) -> V | None:
        """The value, now the most recently used of its tenant's."""
        group = self._groups.get(tenant_of(key))
        found = group.get(key) if group is not None else None
        if found is None or group is None:
            return None
        group.move_to_end(key)
        return found[0]

    def put(self, key: str, value: V, weight: int) -> list[tuple[str, V]]:
        """Keep ``value``; returns what was evicted to make room (never ``key`` itself unless
        it alone exceeds its tenant's cap, when it is not kept)."""
        self.pop(key)
        if weight > self.tenant_limit:
            return []
        tenant = tenant_of(key)
        self._groups.setdefault(tenant, OrderedDict())[key] = (value, weight)
        self.total += weight
        held = self.held.add(tenant, weight)
        evicted: list[tuple[str, V]] = []
        while held > self.tenant_limit:
            evicted.append(self._pop_oldest(tenant, TENANT_CAP))
            held = self.held.weights.get(tenant, 0)
        while self.total > self.limit and (heaviest := self.held.top()) is not None:
            evicted.append(self._pop_oldest(heaviest, FAIR_SHARE))
        return evicted

    def pop(self, key: str) -> V | None:
        tenant = tenant_of(key)
        group = self._groups.get(tenant)
        found = group.pop(key, None) if group is not None else None
        if found is None:
            return None
        self._release(tenant, found[1])
        return found[0]

    def oldest(self, tenant: str) -> Iterator[tuple[str, V]]:
        """The tenant's entries, least recently used first (do not change them while iterating)."""
        for key, (value, _) in self._groups.get(tenant, {}).items():
            yield key, value

    def tenants(self) -> list[str]:
        return list(self._groups)

    def drop_front(self, tenant: str, stale: Callable[[V], bool], limit: int | None = None) -> int:
        """Drop the tenant's least recently used entries while ``stale`` says so (at most
        ``limit``); the count dropped."""
        group, dropped = self._groups.get(tenant), 0
        while group and (limit is None or dropped < limit):
            key, (value, _) = next(iter(group.items()))
            if not stale(value):
                break
            self.pop(key)
            dropped += 1
        return dropped

    def clear(self) -> None:
        self._groups.clear()
        self.held.clear()
        self.total = 0

    def at_cap(self, near: float = 0.9) -> int:
        """Tenants holding at least ``near`` of their own cap."""
        return sum(1 for weight in self.held.weights.values() if weight >= near * self.tenant_limit)

    def _pop_oldest(self, tenant: str, reason: str) -> tuple[str, V]:
        group = self._groups[tenant]
        key, (value, weight) = group.popitem(last=False)
        self._release(tenant, weight)
        self.evicted[reason] += 1
        return key, value

    def _release(self, tenant: str, weight: int) -> None:
        self.total -= weight
        self.held.add(tenant, -weight)
        if not self._groups[tenant]:
            del self._groups[tenant]
