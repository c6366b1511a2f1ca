"""The incremental ledger agrees with a fresh count over the same kept events, whatever arrives
and whatever leaves: totals (runs, recovery, savings), the feed and each run's events."""

from __future__ import annotations

import random

import pytest

from gateway.console.ledger import Ledger
from gateway.console.view import Item

ACTIONS = ("warn", "warn", "reject", "terminate", "pass")


def stream(seed: int, count: int) -> list[Item]:
    """Interventions of a few runs; each stop priced by a savings event a few events later, as
    the savings sink writes them (one request's stops each have their own join key here, so the
    pairing is the same whichever events are kept)."""
    rng = random.Random(seed)
    data: list[dict] = []
    due: list[tuple[int, dict]] = []
    for n in range(count):
        while due and due[0][0] <= n:
            data.append(due.pop(0)[1])
        action = rng.choice(ACTIONS)
        hit = {"k": "i", "session": f"s{rng.randrange(6)}", "run": rng.randrange(3), "request_id": f"r{n}"}
        hit |= {"detector": rng.choice(("a", "b")), "action": action, "agent": rng.choice((None, "x"))}
        data.append(hit)
        if action in ("reject", "terminate") and rng.random() < 0.8:
            price = {
                "tokens": rng.randrange(500),
                "cost_usd": rng.choice((None, 0.01, 0.002)),
                "session": hit["session"],
            }
            due.append(
                (
                    n + rng.randrange(1, 4),
                    {"k": "s", **{k: hit[k] for k in ("request_id", "detector", "action")}, **price},
                )
            )
    return [Item(f"{n}-0", d, None, seq=n) for n, d in enumerate(data)]


@pytest.mark.parametrize("seed", range(12))
def test_adding_the_newest_and_dropping_the_oldest_matches_a_fresh_count(seed):
    items, keep = stream(seed, 400), 40 + seed * 7
    ledger = Ledger()
    for n, item in enumerate(items):
        ledger.add(item)
        while len(ledger.items) > keep:
            ledger.drop_oldest()
        if n % 17 == 0 or n == len(items) - 1:
            kept = items[max(0, n + 1 - keep) : n + 1]
            fresh = Ledger()
            for one in kept:
                fresh.add(one)
            assert ledger.totals() == fresh.totals()
            assert ledger.feed(1000) == fresh.feed(1000)
            assert ledger.run("s1", 1) == fresh.run("s1", 1)
    for _ in range(len(ledger.items)):
        ledger.drop_oldest()
    assert ledger.totals() == Ledger().totals() and not ledger.saved


@pytest.mark.parametrize("seed", range(6))
def test_a_page_merging_what_changed_since_its_newest_shows_the_whole_feed(seed):
    """What ``console.js`` does with a delta: new rows on top, earlier rows priced in place."""
    items, keep, limit = stream(seed, 300), 60, 25
    ledger, page, newest = Ledger(), [], ""
    for n, item in enumerate(items):
        ledger.add(item)
        while len(ledger.items) > keep:
            ledger.drop_oldest()
        if n % 5:
            continue
        changed = ledger.since(newest, limit) if newest else None
        if changed is None:
            page = ledger.feed(limit)
        else:
            rows, priced = changed
            page = rows + [{**row, **priced.get(row["id"], {})} for row in page][: limit - len(rows)]
        newest = ledger.newest
        whole = ledger.feed(limit)
        assert page[: len(whole)] == whole
    assert ledger.since("no-such-id", limit) is None
