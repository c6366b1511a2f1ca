"""The kept events as this process's console last read them, advanced by cursor reads.

Each refresh asks the store only for the entries newer than the newest one read (``after``):
an unchanged log costs one empty read, a changed one what changed. New entries go into the
ledger of every run (the operator's) and, with ``ui.tenant_view``, the ledger of their client
namespace (a tenant's view); the oldest leave both once more than ``keep`` are held. So however
many tabs poll, no poll re-reads or re-counts what is kept, and the request path never waits on
a console read.
"""

from __future__ import annotations

import asyncio

from gateway.console import view
from gateway.console.ledger import Ledger
from gateway.console.tenants import Tenancy, namespace
from gateway.state.base import StateStore

EMPTY = Ledger()
YIELD_EVERY = 256


class Window:
    def __init__(self, store: StateStore, keep: int, tenancy: Tenancy, per_namespace: bool) -> None:
        self.store, self.keep, self.tenancy, self.per_namespace = store, keep, tenancy, per_namespace
        self.everything = Ledger()
        self.spaces: dict[str, Ledger] = {}
        self.cursor = ""  # the newest id read
        self._seq = 0
        self._lock = asyncio.Lock()  # one read at a time: tabs polling together share its result

    def ledger(self, space: str | None) -> Ledger:
        """Every run's (None), or one client namespace's."""
        return self.everything if space is None else self.spaces.get(space, EMPTY)

    async def refresh(self) -> None:
        async with self._lock:
            logged = await self.store.recent_events(self.keep, after=self.cursor)
            if not logged:
                return
            for n, one in enumerate(reversed(logged)):  # oldest first
                item = view.read(one)
                if item is not None:
                    self._add(item)
                self.cursor = one.id  # a refresh cancelled between batches resumes after it
                if n % YIELD_EVERY == YIELD_EVERY - 1:
                    await asyncio.sleep(0)  # a first read of a long log: traffic goes on between batches
            self.cursor = logged[0].id
            while len(self.everything.items) > self.keep:
                self._drop()

    def _add(self, item: view.Item) -> None:
        self._seq += 1
        item.seq = self._seq
        session = str(item.data.get("session") or "")
        item.data["tenant"] = self.tenancy.name(session)
        self.everything.add(item)
        if self.per_namespace:
            self.spaces.setdefault(namespace(session), Ledger()).add(item)

    def _drop(self) -> None:
        item = self.everything.drop_oldest()
        if self.per_namespace:
            space = namespace(str(item.data.get("session") or ""))
            ledger = self.spaces[space]
            ledger.drop_oldest()
            if not ledger.items:
                del self.spaces[space]
