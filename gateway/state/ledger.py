"""The ownership claims this process made, for when the shared store cannot answer.

A claim (``gateway.state.claims``) is written through to Redis and also noted here. Redis stays
the answer while it answers (replicas decide alike, and its per-tenant budget applies). While it
stalls or is down, a check reads this ledger instead: the tenant's own objects created through
this process stay its own, and only an id this process never saw is let through unverified
(ids are unguessable; refusing it would break the agent for a stall it did not cause). Claims
Redis did not take are kept ``unwritten``, count as made until written, and are written when it
answers again, so an object created during the outage is its tenant's on every replica
afterwards, not a 404.

Both are bounded in count and shared fairly between tenants (``gateway.state.shares``): one
tenant creating many objects forgets its own oldest notes, never another tenant's. A note older
than the TTL is forgotten, as the store forgets the claim itself.
"""

from __future__ import annotations

import time
from itertools import islice

from gateway.state.shares import Shares

DEFAULT_MAX_CLAIMS = 100_000  # about 15 MB at its fullest


class Ledger:
    def __init__(self, max_claims: int = DEFAULT_MAX_CLAIMS, ttl_s: float = 3600.0) -> None:
        self.ttl_s = ttl_s
        self._made: Shares[float] = Shares(max_claims)  # key -> when made (monotonic)
        self._unwritten: Shares[float] = Shares(max_claims)

    def made(self, key: str) -> None:
        self._made.put(key, time.monotonic(), 1)

    def knows(self, key: str) -> bool:
        """This process made the claim, within the TTL."""
        made = self._made.get(key)
        if made is None:
            return False
        if time.monotonic() - made > self.ttl_s:
            self._made.pop(key)
            return False
        return True

    def unwritten(self, key: str) -> None:
        """The store did not take the claim: write it once it answers."""
        self._unwritten.put(key, time.monotonic(), 1)

    def waiting(self, key: str) -> bool:
        """The claim is made but not written yet: the store's "no" for it is not an answer."""
        return self._unwritten.get(key) is not None

    @property
    def pending(self) -> int:
        return self._unwritten.total

    def next_unwritten(self) -> str | None:
        """The next claim to write (one tenant's oldest), skipping those past the TTL; it stays
        queued until ``written``."""
        now = time.monotonic()
        for tenant in self._unwritten.tenants():
            for key, made in list(islice(self._unwritten.oldest(tenant), 64)):
                if now - made <= self.ttl_s:
                    return key
                self._unwritten.pop(key)
        return None

    def written(self, key: str) -> None:
        self._unwritten.pop(key)
