"""The console's reading of the kept events: runs counted once, recovery after a warning, each
veto of a request paired with its own savings."""

from __future__ import annotations

import orjson

from gateway.console.ledger import Ledger
from gateway.console.view import Item, parse
from gateway.state.events import LoggedEvent


def totals(items: list[Item]) -> dict:
    return Ledger.of(items).totals()


def feed(items: list[Item], limit: int) -> list[dict]:
    return Ledger.of(items).feed(limit)


def log(*entries: dict) -> list[LoggedEvent]:
    """Oldest first in, newest first out, as the store answers."""
    return [LoggedEvent(f"{n}-0", orjson.dumps(e), None) for n, e in reversed(list(enumerate(entries, 1)))]


def hit(
    session: str,
    action: str,
    detector: str = "no_progress",
    agent: str | None = None,
    request: str = "r1",
    count: int = 3,
) -> dict:
    return {
        "k": "i",
        "session": session,
        "run": 1,
        "agent": agent,
        "detector": detector,
        "action": action,
        "request_id": request,
        "count": count,
        "time": "t",
    }


def saved(request: str, action: str, tokens: int, cost: float | None) -> dict:
    return {
        "k": "s",
        "request_id": request,
        "detector": "no_progress",
        "action": action,
        "tokens": tokens,
        "cost_usd": cost,
    }


def test_runs_are_counted_once_and_a_warned_run_that_was_stopped_did_not_recover():
    items = parse(
        log(
            hit("a", "warn"),
            hit("a", "warn", count=4),
            hit("a", "reject", request="r2"),
            hit("a", "terminate", request="r2"),
            hit("b", "warn", agent="bot"),
            hit("c", "pass", detector="cycle"),
        )
    )
    runs = totals(items)["runs"]
    assert runs["warned"] == 2 and runs["vetoed"] == 1 and runs["terminated"] == 1 and runs["stopped"] == 1
    assert runs["recovered"] == 1 and runs["recovery_rate"] == 0.5  # b recovered, a did not
    by_agent = totals(items)["by_agent"]
    assert by_agent["bot"]["recovery_rate"] == 1.0 and by_agent["(default)"]["warned"] == 1
    assert totals(items)["by_detector"]["cycle"]["warned"] == 0  # held back: nothing done


def test_two_vetoes_of_one_request_each_get_their_own_savings():
    items = parse(
        log(
            hit("a", "reject", count=5),
            hit("a", "reject", count=6),
            hit("a", "terminate", count=7),
            saved("r1", "reject", 100, 0.01),
            saved("r1", "reject", 120, 0.02),
            saved("r1", "terminate", 150, None),
        )
    )
    rows = feed(items, 10)
    assert [(r["count"], r["tokens"]) for r in rows] == [(7, 150), (6, 120), (5, 100)]
    runs = totals(items)["runs"]
    assert runs["tokens_saved"] == 370 and runs["cost_saved_usd"] == 0.03


def test_unreadable_entries_are_skipped():
    logged = [LoggedEvent("2-0", b"not json", None), *log(hit("a", "warn"))]
    assert [r["session"] for r in feed(parse(logged), 10)] == ["a"]
