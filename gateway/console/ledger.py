"""The console's totals and feed kept up to date one event at a time, so a poll that finds new
events costs what is new, never what is kept.

A ``Ledger`` holds kept events oldest first. Adding the newest or dropping the oldest updates, in
constant time: the pairing of each veto or termination with its savings event (same request,
detector and action, paired in arrival order), each run's part of each tally (all runs, by
detector, by agent) and the tallies themselves. A run is a session's user prompt; within one tally
it counts once: warned (a warning applied), vetoed, terminated, recovered (warned, and no veto or
termination after its first kept warning).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gateway.console.view import STOPS, Item, JoinKey, Run, join_key

TallyKey = tuple[str, str]  # ("", "") every run; ("detector", name); ("agent", name)
ALL: TallyKey = ("", "")


@dataclass(slots=True)
class Part:
    """One run's events within one tally."""

    events: int = 0
    warns: deque[int] = field(default_factory=deque)  # the warnings' sequence numbers, oldest first
    rejects: int = 0
    terminates: int = 0
    last_stop: int = -1  # sequence number of the newest veto or termination; -1: none kept
    tokens: int = 0
    cost_usd: float = 0.0

    def flags(self) -> tuple[bool, bool, bool, bool]:
        """warned, vetoed, terminated, recovered."""
        warned = bool(self.warns)
        return warned, self.rejects > 0, self.terminates > 0, warned and self.last_stop < self.warns[0]


@dataclass(slots=True)
class Counts:
    """One tally: how many runs are in each state, what their stops saved."""

    warned: int = 0
    vetoed: int = 0
    terminated: int = 0
    stopped: int = 0
    recovered: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    events: int = 0

    def add(self, part: Part, sign: int) -> None:
        warned, vetoed, terminated, recovered = part.flags()
        self.warned += sign * warned
        self.vetoed += sign * vetoed
        self.terminated += sign * terminated
        self.stopped += sign * (vetoed or terminated)
        self.recovered += sign * recovered
        self.tokens += sign * part.tokens
        self.cost_usd += sign * part.cost_usd
        self.events += sign * part.events

    def as_dict(self) -> dict[str, Any]:
        return {
            "warned": self.warned,
            "vetoed": self.vetoed,
            "terminated": self.terminated,
            "stopped": self.stopped,
            "recovered": self.recovered,
            "recovery_rate": round(self.recovered / self.warned, 3) if self.warned else None,
            "tokens_saved": self.tokens,
            "cost_saved_usd": round(self.cost_usd, 6),
        }


class Ledger:
    def __init__(self) -> None:
        self.items: deque[Item] = deque()  # oldest first
        self.saved: dict[str, Item] = {}  # intervention id -> its savings event
        self.interventions = 0
        self._by_id: dict[str, Item] = {}
        self._paired: dict[str, Item] = {}  # savings id -> the intervention it priced
        self._stops: dict[JoinKey, deque[Item]] = {}  # stops waiting for their savings
        self._savings: dict[JoinKey, deque[Item]] = {}  # savings waiting for their stop
        self._runs: dict[Run, deque[Item]] = {}
        self._parts: dict[tuple[Run, TallyKey], Part] = {}
        self._tallies: dict[TallyKey, Counts] = {}

    @classmethod
    def of(cls, newest_first: list[Item]) -> Ledger:
        ledger = cls()
        for seq, item in enumerate(reversed(newest_first)):
            item.seq = seq
            ledger.add(item)
        return ledger

    @property
    def newest(self) -> str:
        return self.items[-1].id if self.items else ""

    def add(self, item: Item) -> None:
        """Append ``item``, newer than every kept one (``item.seq`` greater)."""
        self.items.append(item)
        self._by_id[item.id] = item
        d = item.data
        if d.get("k") == "s":
            waiting = self._stops.get(join_key(d))
            if waiting:
                self._pair(_pop(self._stops, join_key(d)), item, +1)
            else:
                self._savings.setdefault(join_key(d), deque()).append(item)
            return
        self.interventions += 1
        self._runs.setdefault(_run(d), deque()).append(item)
        self._edit(item, lambda part: _count(part, item, +1))
        if d.get("action") in STOPS:
            if self._savings.get(join_key(d)):
                self._pair(item, _pop(self._savings, join_key(d)), +1)
            else:
                self._stops.setdefault(join_key(d), deque()).append(item)

    def drop_oldest(self) -> Item:
        item = self.items.popleft()
        del self._by_id[item.id]
        d = item.data
        if d.get("k") == "s":
            stop = self._paired.get(item.id)
            if stop is not None:
                self._pair(stop, item, -1)
            else:
                _discard(self._savings, join_key(d), item)
            return item
        self.interventions -= 1
        saving = self.saved.get(item.id)
        if saving is not None:
            self._pair(item, saving, -1)
        _discard(self._stops, join_key(d), item)
        self._edit(item, lambda part: _count(part, item, -1))
        run = self._runs[_run(d)]
        run.popleft()
        if not run:
            del self._runs[_run(d)]
        return item

    def feed(self, limit: int) -> list[dict[str, Any]]:
        """Interventions, newest first, with ``tokens`` / ``cost_usd`` saved when priced."""
        out = []
        for item in reversed(self.items):
            if item.data.get("k") != "i":
                continue
            out.append(self._row(item))
            if len(out) >= limit:
                break
        return out

    def since(self, ref: str, limit: int) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]] | None:
        """What changed after the kept event ``ref``: the interventions newer than it (as ``feed``
        rows, newest first, at most ``limit``) and the earlier interventions priced since
        (id -> tokens, cost_usd); None when ``ref`` is not kept (the reader needs the whole feed).
        Walks the new events only."""
        known = self._by_id.get(ref)
        if known is None:
            return None
        rows: list[dict[str, Any]] = []
        priced: dict[str, dict[str, Any]] = {}
        for item in reversed(self.items):
            if item.seq <= known.seq:
                break
            if item.data.get("k") == "i":
                if len(rows) < limit:
                    rows.append(self._row(item))
            elif (stop := self._paired.get(item.id)) is not None and stop.seq <= known.seq:
                priced[stop.id] = {"tokens": item.data.get("tokens"), "cost_usd": item.data.get("cost_usd")}
        return rows, priced

    def _row(self, item: Item) -> dict[str, Any]:
        found = self.saved.get(item.id)
        s = found.data if found else None
        return {
            "id": item.id,
            **item.data,
            "tokens": s["tokens"] if s else None,
            "cost_usd": s["cost_usd"] if s else None,
        }

    def totals(self) -> dict[str, Any]:
        """All runs, by detector, by agent: read from the tallies, whatever is kept."""
        by: dict[str, dict[str, Any]] = {"detector": {}, "agent": {}}
        for (kind, name), counts in sorted(self._tallies.items()):
            if kind:
                by[kind][name] = counts.as_dict()
        return {
            "runs": self._tallies.get(ALL, Counts()).as_dict(),
            "events": self.interventions,
            "by_detector": by["detector"],
            "by_agent": by["agent"],
        }

    def run(self, session: str, run: int) -> list[Item]:
        """The run's kept events, oldest first."""
        return list(self._runs.get((session, run), ()))

    def _pair(self, stop: Item, saving: Item, sign: int) -> None:
        tokens, cost = int(saving.data.get("tokens") or 0), float(saving.data.get("cost_usd") or 0.0)
        if sign > 0:
            self.saved[stop.id], self._paired[saving.id] = saving, stop
        else:
            del self.saved[stop.id], self._paired[saving.id]

        def price(part: Part) -> None:
            part.tokens += sign * tokens
            part.cost_usd += sign * cost

        self._edit(stop, price)

    def _edit(self, item: Item, change: Callable[[Part], None]) -> None:
        """Apply ``change`` to the item's run in each of its tallies, keeping the tallies true."""
        run = _run(item.data)
        for key in _keys(item.data):
            part = self._parts.setdefault((run, key), Part())
            tally = self._tallies.setdefault(key, Counts())
            tally.add(part, -1)
            change(part)
            tally.add(part, +1)
            if part.events == 0:
                del self._parts[(run, key)]
            if tally.events == 0:
                del self._tallies[key]


def _count(part: Part, item: Item, sign: int) -> None:
    """Add (+1) the newest or remove (-1) the oldest of a run's events in one tally."""
    action = item.data.get("action")
    part.events += sign
    if action == "warn":
        if sign > 0:
            part.warns.append(item.seq)
        else:
            part.warns.popleft()
    elif action in STOPS:
        if action == "reject":
            part.rejects += sign
        else:
            part.terminates += sign
        if sign > 0:
            part.last_stop = item.seq
        elif part.rejects + part.terminates == 0:
            part.last_stop = -1


def _keys(d: dict[str, Any]) -> tuple[TallyKey, ...]:
    return (ALL, ("detector", str(d.get("detector"))), ("agent", d.get("agent") or "(default)"))


def _run(d: dict[str, Any]) -> Run:
    return (d.get("session"), d.get("run"))


def _pop(waiting: dict[JoinKey, deque[Item]], key: JoinKey) -> Item:
    queue = waiting[key]
    item = queue.popleft()
    if not queue:
        del waiting[key]
    return item


def _discard(waiting: dict[JoinKey, deque[Item]], key: JoinKey, item: Item) -> None:
    queue = waiting.get(key)
    if queue is not None and any(one is item for one in queue):
        queue.remove(item)
        if not queue:
            del waiting[key]
