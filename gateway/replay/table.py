"""The plain-text table ``loopguard replay`` prints."""

from __future__ import annotations

from gateway.replay.model import ACTIONS, Result

HEADER = ("conversation", "messages", "tool calls", "first warn", "first reject", "first terminate", "detector")


def render_table(results: list[Result]) -> str:
    rows = [HEADER] + [_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(HEADER))]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(w) if i in (0, 6) else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    lines.append(summary(results))
    return "\n".join(lines)


def summary(results: list[Result]) -> str:
    affected = sum(r.affected for r in results)
    counts = ", ".join(f"{sum(a in r.first for r in results)} {a}" for a in ACTIONS)
    return f"{len(results)} conversations, {affected} affected ({counts})"


def _row(result: Result) -> tuple[str, ...]:
    steps = tuple(str(result.first[a][0]) if a in result.first else "-" for a in ACTIONS)
    calls = str(len(result.rows))
    return (result.label, str(result.messages), calls, *steps, ", ".join(result.detectors) or "-")
