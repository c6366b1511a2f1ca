"""How a policy did on labelled runs: per label and per agent, how many runs it warned and
stopped, how many calls after the labelled start of a loop (``loop_at``) it first spoke and first
stopped, and what the stops would have saved; the healthy runs it would have disturbed come
first, each with where and why.

"Warned": the model would have heard from the gateway (a warning, or a stronger action without
one before it). "Stopped": a call would have been refused (vetoed, or the run ended). Lateness is
``first_warn - loop_at``: 0 is the call the labeller marked, a negative number is before it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from gateway.replay.model import ACTIONS, Result, Row

UNLABELLED = "unlabelled"
AROUND = 2  # calls shown before the one an action fired at (and one after)


def label_of(result: Result) -> str:
    return result.label or UNLABELLED


def scores(results: list[Result]) -> dict[str, Any]:
    by_label: dict[str, list[Result]] = defaultdict(list)
    by_agent: dict[str, dict[str, list[Result]]] = defaultdict(lambda: defaultdict(list))
    for result in results:
        by_label[label_of(result)].append(result)
        by_agent[result.agent][label_of(result)].append(result)
    return {
        "runs": len(results),
        "labels": {label: group(rs) for label, rs in sorted(by_label.items(), key=_order)},
        "agents": {
            agent: {label: group(rs) for label, rs in sorted(labels.items(), key=_order)}
            for agent, labels in sorted(by_agent.items())
        },
        "healthy_disturbed": [disturbed(r) for r in results if r.label == "healthy" and r.first_warn is not None],
        "saved": saved(results),
    }


def _order(item: tuple[str, Any]) -> tuple[int, str]:
    rank = {"loop": 0, "borderline": 1, "healthy": 2}
    return rank.get(item[0], 3), item[0]


def group(results: list[Result]) -> dict[str, Any]:
    return {
        "runs": len(results),
        "warned": sum(r.first_warn is not None for r in results),
        "stopped": sum(r.first_stop is not None for r in results),
        "warn_after_loop_at": lateness(_after(results, lambda r: r.first_warn)),
        "stop_after_loop_at": lateness(_after(results, lambda r: r.first_stop)),
        **saved(results),
    }


def _after(results: list[Result], at: Callable[[Result], int | None]) -> list[int]:
    """Calls from ``loop_at`` to ``at`` in each labelled run where both are known."""
    out = []
    for result in results:
        when = at(result)
        if when is not None and result.loop_at is not None:
            out.append(when - result.loop_at)
    return out


def lateness(values: list[int]) -> dict[str, Any] | None:
    """How many calls after ``loop_at``: median, range, and how many came before it."""
    if not values:
        return None
    return {
        "runs": len(values),
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "early": sum(v < 0 for v in values),
    }


def saved(results: list[Result]) -> dict[str, Any]:
    """Tokens and dollars the stops would have saved (``None`` dollars: nothing priced)."""
    priced = [r.savings.cost for r in results if r.savings and r.savings.cost is not None]
    return {
        "tokens_saved": sum(r.savings.tokens for r in results if r.savings),
        "cost_saved_usd": round(sum(priced), 6) if priced else None,
    }


def disturbed(result: Result) -> dict[str, Any]:
    """A healthy run the policy would have warned or stopped: its first action, and the calls
    around it."""
    action, (step, detector) = min(result.first.items(), key=lambda kv: (kv[1][0], ACTIONS.index(kv[0])))
    at = step - 1
    return {
        "path": result.name,
        "id": result.id,
        "agent": result.agent,
        "call": at,
        "action": action,
        "detector": detector,
        "stopped_at": result.first_stop,
        "calls": [line(r) for r in result.rows[max(0, at - AROUND) : at + 2]],
    }


def line(row: Row, width: int = 110) -> str:
    """One call on one line: ``#index tool arguments -> result``."""
    args = " ".join(row.args.split())
    result = " ".join((row.result or "-").split())
    text = f"#{row.step - 1} {row.tool} {args[:60]} -> {result}"
    marks = "".join(f" [{m.action}: {m.detector}]" for m in row.marks)
    return (text[: width - len(marks) - 1] + "\u2026" if len(text) + len(marks) > width else text) + marks


def late_text(late: dict[str, Any] | None) -> str:
    """A lateness as the tables print it: ``+2 (-1..+5, 1 early)``; ``-`` when none was timed."""
    if late is None:
        return "-"
    early = f", {late['early']} early" if late["early"] else ""
    return f"{late['median']:+g} ({late['min']:+d}..{late['max']:+d}{early})"
