"""The HTML report's scores: per label and per agent (``gateway.replay.scores``), then the healthy
runs the policy would have disturbed, each with its first action and the calls around it."""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.replay.model import Result
from gateway.replay.scores import late_text, scores

_COLUMNS = ("runs", "warned", "stopped", "warn after loop_at", "stop after loop_at", "tokens saved", "cost saved")


def scores_section(results: list[Result]) -> str:
    scored = scores(results)
    labels = "".join(_row(label, g) for label, g in scored["labels"].items())
    agents = "".join(_row(label, g, agent) for agent, by in scored["agents"].items() for label, g in by.items())
    head = "".join(f"<th>{escape(c)}</th>" for c in _COLUMNS)
    disturbed = scored["healthy_disturbed"]
    items = "".join(_disturbed(d) for d in disturbed)
    fp = (
        f'<h2>Healthy runs the policy would have disturbed: {len(disturbed)}</h2><ul class="disturbed">{items}</ul>'
        if disturbed
        else '<p class="note">No run labelled healthy would have been warned or stopped.</p>'
    )
    return (
        '<section class="scores"><h2>Scores by label</h2>'
        f'<p class="note">Calls are counted from 0. After loop_at: the median of first action (or stop) minus '
        "the labelled start of the loop, its range, and how many came before it.</p>"
        f'<table class="scores-labels"><thead><tr><th>label</th>{head}</tr></thead><tbody>{labels}</tbody></table>'
        f'<h2>By agent</h2><table class="scores-agents"><thead><tr><th>agent</th><th>label</th>{head}</tr></thead>'
        f"<tbody>{agents}</tbody></table>{fp}</section>"
    )


def _row(label: str, g: dict[str, Any], agent: str | None = None) -> str:
    cost = "-" if g["cost_saved_usd"] is None else f"${g['cost_saved_usd']:,.4f}"
    cells = [
        str(g["runs"]),
        str(g["warned"]),
        str(g["stopped"]),
        late_text(g["warn_after_loop_at"]),
        late_text(g["stop_after_loop_at"]),
        f"{g['tokens_saved']:,}",
        cost,
    ]
    lead = f"<td>{escape(agent)}</td>" if agent is not None else ""
    body = "".join(f'<td data-col="{escape(c)}">{escape(v)}</td>' for c, v in zip(_COLUMNS, cells, strict=True))
    return f'<tr data-label="{escape(label)}">{lead}<td>{escape(label)}</td>{body}</tr>'


def _disturbed(d: dict[str, Any]) -> str:
    stop = f", stopped at call {d['stopped_at']}" if d["stopped_at"] is not None else ""
    calls = "\n".join(d["calls"])
    return (
        f'<li data-path="{escape(d["path"])}"><b>{escape(d["path"])}</b> ({escape(d["agent"])}): '
        f"{escape(d['action'])} by <b>{escape(d['detector'])}</b> at call {d['call']}{stop}"
        f'<pre class="around">{escape(calls)}</pre></li>'
    )
