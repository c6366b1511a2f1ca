"""The console's reading of the kept events: the feed (newest first, each intervention with what
it saved), the totals per detector and agent, and one run's events.

A run is a session's user prompt (``session``, ``run``). Totals count runs among the kept events:
warned (a warning was applied), vetoed (a call refused), terminated; recovered after a warning:
a warned run with no veto or termination after its first warning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.state.events import LoggedEvent

STOPS = ("reject", "terminate")


@dataclass(slots=True)
class Item:
    id: str
    data: dict[str, Any]
    detail: str | None


def parse(logged: list[LoggedEvent]) -> list[Item]:
    """Newest first, as stored; unreadable entries skipped (another version may have written them)."""
    out = []
    for one in logged:
        try:
            data = orjson.loads(one.entry)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict) and data.get("k") in ("i", "s"):
            out.append(Item(one.id, data, one.detail))
    return out


# (request_id, detector, action): what pairs an intervention with its savings event.
JoinKey = tuple[object, object, object]
# (session, run): one agent run, counted once per tally however many events it has.
Run = tuple[object, object]


def join_key(d: dict[str, Any]) -> JoinKey:
    return (d.get("request_id"), d.get("detector"), d.get("action"))


def savings_of(items: list[Item]) -> dict[str, dict[str, Any]]:
    """Intervention id -> its savings event: the same request, detector and action, paired in
    order (one request may veto the same loop twice, each veto priced on its own)."""
    waiting: dict[JoinKey, list[dict[str, Any]]] = {}
    for item in reversed(items):  # oldest first
        if item.data.get("k") == "s":
            waiting.setdefault(join_key(item.data), []).append(item.data)
    out = {}
    for item in reversed(items):
        if item.data.get("k") == "i" and item.data.get("action") in STOPS:
            queue = waiting.get(join_key(item.data))
            if queue:
                out[item.id] = queue.pop(0)
    return out


def feed(items: list[Item], limit: int) -> list[dict[str, Any]]:
    """Interventions, newest first, with ``tokens`` / ``cost_usd`` saved when priced."""
    saved = savings_of(items)
    out = []
    for item in items:
        if item.data.get("k") != "i":
            continue
        s = saved.get(item.id)
        out.append(
            {"id": item.id, **item.data, "tokens": s["tokens"] if s else None, "cost_usd": s["cost_usd"] if s else None}
        )
        if len(out) >= limit:
            break
    return out


@dataclass(slots=True)
class Tally:
    warned: set[Run] = field(default_factory=set)
    vetoed: set[Run] = field(default_factory=set)
    terminated: set[Run] = field(default_factory=set)
    recovered: set[Run] = field(default_factory=set)
    tokens: int = 0
    cost_usd: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        warned = len(self.warned)
        return {
            "warned": warned,
            "vetoed": len(self.vetoed),
            "terminated": len(self.terminated),
            "stopped": len(self.vetoed | self.terminated),
            "recovered": len(self.recovered),
            "recovery_rate": round(len(self.recovered) / warned, 3) if warned else None,
            "tokens_saved": self.tokens,
            "cost_saved_usd": round(self.cost_usd, 6),
        }


def totals(items: list[Item]) -> dict[str, Any]:
    """Over the kept events: all runs, by detector, by agent."""
    everything = Tally()
    detectors: dict[str, Tally] = {}
    agents: dict[str, Tally] = {}
    saved = savings_of(items)
    interventions = [i for i in reversed(items) if i.data.get("k") == "i"]  # oldest first
    for item in interventions:
        d, s = item.data, saved.get(item.id)
        for tally in (
            everything,
            detectors.setdefault(str(d.get("detector")), Tally()),
            agents.setdefault(d.get("agent") or "(default)", Tally()),
        ):
            _count(tally, d)
            if s is not None:
                tally.tokens += int(s.get("tokens") or 0)
                tally.cost_usd += float(s.get("cost_usd") or 0.0)
    return {
        "runs": everything.as_dict(),
        "events": len(interventions),
        "by_detector": {k: v.as_dict() for k, v in sorted(detectors.items())},
        "by_agent": {k: v.as_dict() for k, v in sorted(agents.items())},
    }


def _count(tally: Tally, d: dict[str, Any]) -> None:
    run: Run = (d.get("session"), d.get("run"))
    action = d.get("action")
    if action == "warn":
        if run not in tally.warned:
            tally.recovered.add(run)  # until a veto or a termination says otherwise
        tally.warned.add(run)
    elif action in STOPS:
        tally.recovered.discard(run)
        (tally.vetoed if action == "reject" else tally.terminated).add(run)


def run_items(items: list[Item], session: str, run: int) -> list[Item]:
    """The run's events, oldest first."""
    return [i for i in reversed(items) if i.data.get("session") == session and i.data.get("run") == run]
