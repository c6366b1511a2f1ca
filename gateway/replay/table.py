"""The plain-text tables ``loopguard replay`` prints: one row per run, then with labels the
scores per label and per agent and the healthy runs the policy would have disturbed, and with
``--compare`` the two policies side by side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.replay.model import ACTIONS, Result
from gateway.replay.scores import label_of, late_text

HEADER = ("conversation", "messages", "tool calls", "first warn", "first reject", "first terminate", "detector")


def render_table(results: list[Result]) -> str:
    rows = [_row(r) for r in results]
    return grid(HEADER, rows, left=(0, 6)) + "\n\n" + summary(results)


def grid(header: Sequence[str], rows: Sequence[Sequence[str]], left: Sequence[int] = (0,)) -> str:
    """Columns padded to their widest cell; ``left``: the columns aligned left (text)."""
    every = [tuple(header), *(tuple(r) for r in rows)]
    widths = [max(len(row[i]) for row in every) for i in range(len(header))]
    lines = []
    for n, row in enumerate(every):
        cells = [cell.ljust(w) if i in left else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def summary(results: list[Result]) -> str:
    affected = sum(r.affected for r in results)
    counts = ", ".join(f"{sum(a in r.first for r in results)} {a}" for a in ACTIONS)
    return f"{len(results)} conversations, {affected} affected ({counts})"


def _row(result: Result) -> tuple[str, ...]:
    steps = tuple(str(result.first[a][0]) if a in result.first else "-" for a in ACTIONS)
    return (result.name, str(result.messages), str(len(result.rows)), *steps, ", ".join(result.detectors) or "-")


# -- scores ---------------------------------------------------------------------------------------

SCORE_HEADER = (
    "label",
    "runs",
    "warned",
    "stopped",
    "warn after loop_at",
    "stop after loop_at",
    "tokens saved",
    "cost saved",
)


def render_scores(scored: dict[str, Any], policy: str) -> str:
    """Per label, per agent and label, and the healthy runs disturbed (calls are 0-based:
    ``#12`` is the 13th tool call)."""
    parts = [f"scores of {policy} (calls counted from 0; after loop_at: median, min..max)"]
    parts.append(grid(SCORE_HEADER, [_score_row(label, g) for label, g in scored["labels"].items()]))
    rows = [(agent, *_score_row(label, g)) for agent, labels in scored["agents"].items() for label, g in labels.items()]
    parts.append("by agent\n" + grid(("agent", *SCORE_HEADER), rows, left=(0, 1)))
    disturbed = scored["healthy_disturbed"]
    if disturbed:
        lines = [f"healthy runs the policy would have disturbed: {len(disturbed)}"]
        for d in disturbed:
            stop = f", stopped at #{d['stopped_at']}" if d["stopped_at"] is not None else ""
            lines.append(f"  {d['path']} ({d['agent']}): {d['action']} by {d['detector']} at #{d['call']}{stop}")
            lines += [f"      {c}" for c in d["calls"]]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _score_row(label: str, g: dict[str, Any]) -> tuple[str, ...]:
    cost = "-" if g["cost_saved_usd"] is None else f"${g['cost_saved_usd']:,.4f}"
    tokens = f"{g['tokens_saved']:,}" if g["tokens_saved"] else "-"
    return (
        label,
        str(g["runs"]),
        str(g["warned"]),
        str(g["stopped"]),
        late_text(g["warn_after_loop_at"]),
        late_text(g["stop_after_loop_at"]),
        tokens,
        cost,
    )


# -- two policies ---------------------------------------------------------------------------------


def render_compare(first: list[Result], second: list[Result], names: tuple[str, str]) -> str:
    """Run by run: where each policy first acts and first stops (``warn/stop``, 0-based calls);
    ``*`` marks the runs where they differ."""
    header = ("run", "label", f"{names[0]} warn/stop", f"{names[1]} warn/stop", "")
    rows = []
    for a, b in zip(first, second, strict=True):
        one, two = _when(a), _when(b)
        rows.append((a.name, label_of(a), one, two, "*" if one != two else ""))
    differ = sum(1 for r in rows if r[4])
    return grid(header, rows, left=(0, 1)) + f"\n\n{differ} of {len(rows)} runs differ"


def _when(result: Result) -> str:
    warn = "-" if result.first_warn is None else str(result.first_warn)
    stop = "-" if result.first_stop is None else str(result.first_stop)
    return f"{warn}/{stop}"
