"""The self-contained HTML report: totals, then one timeline per conversation (tool calls as
rows, repeats highlighted, the step where each action would fire marked). Inline CSS, no script,
no external assets: it can be mailed or attached to a ticket as one file."""

from __future__ import annotations

from html import escape

from gateway.replay.model import ACTIONS, Result
from gateway.replay.style import CSS
from gateway.replay.timeline import timeline_table


def render_html(
    results: list[Result], *, policy: str, sources: list[str], unknown_models: list[str], generated: str
) -> str:
    results = sorted(results, key=_severity)  # the conversations to look at first, first
    body = [_header(policy, sources, generated), _totals(results, unknown_models), _index(results)]
    body += [_conversation(n, r) for n, r in enumerate(results, 1)]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>LoopGuard replay: {escape(policy)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _severity(result: Result) -> tuple[int, int]:
    strongest = max((ACTIONS.index(a) + 1 for a in result.first), default=0)
    first = min((step for step, _ in result.first.values()), default=0)
    return (-strongest, first)


def _header(policy: str, sources: list[str], generated: str) -> str:
    return (
        f'<header><h1>LoopGuard replay report</h1><p class="sub">policy <b>{escape(policy)}</b> over '
        f"{escape(', '.join(sources))} &middot; generated {escape(generated)}</p></header>"
    )


def _totals(results: list[Result], unknown_models: list[str]) -> str:
    affected = sum(r.affected for r in results)
    tokens = sum(r.savings.tokens for r in results if r.savings)
    priced = [r.savings.cost for r in results if r.savings and r.savings.cost is not None]
    cost = f"${sum(priced):,.4f}" if priced else "n/a"
    stats: list[tuple[str, int | str, str]] = [
        ("conversations", len(results), ""),
        ("affected", affected, "would see an intervention"),
    ]
    stats += [(a, sum(a in r.first for r in results), "conversations") for a in ACTIONS]
    stats += [("tokens saved", f"{tokens:,}", "after the stop point"), ("cost saved", cost, "USD")]
    cards = "".join(
        f'<div class="stat" data-stat="{escape(k)}"><span class="v">{escape(str(v))}</span>'
        f'<span class="k">{escape(k)}</span><span class="h">{escape(h)}</span></div>'
        for k, v, h in stats
    )
    notes = [
        "Savings are the tokens of the messages after the point where the run would have been "
        "stopped (the first terminate, else the first vetoed call): a lower bound, since every "
        "later request also re-sent the whole history."
    ]
    if unknown_models:
        notes.append(
            "Tokens estimated as characters / 4, or not priced (no list price): " + ", ".join(unknown_models) + "."
        )
    return (
        f'<section class="totals">{cards}</section><section class="notes">'
        + "".join(f'<p class="note">{escape(n)}</p>' for n in notes)
        + "</section>"
    )


def _index(results: list[Result]) -> str:
    rows = "".join(
        f'<tr class="{"affected" if r.affected else "healthy"}"><td><a href="#conv-{n}">{escape(r.label)}</a></td>'
        f"<td>{len(r.rows)}</td>"
        + "".join(f"<td>{_first(r, a)}</td>" for a in ACTIONS)
        + f"<td>{escape(', '.join(r.detectors) or '-')}</td></tr>"
        for n, r in enumerate(results, 1)
    )
    return (
        '<section class="index"><table><thead><tr><th>conversation</th><th>tool calls</th><th>warn</th>'
        "<th>reject</th><th>terminate</th><th>detector</th></tr></thead><tbody>" + rows + "</tbody></table></section>"
    )


def _first(result: Result, action: str) -> str:
    if action not in result.first:
        return "-"
    return f'<span class="pill pill-{action}">step {result.first[action][0]}</span>'


def _conversation(n: int, r: Result) -> str:
    state = "affected" if r.affected else "healthy"
    saved = ""
    if r.savings is not None:
        cost = "" if r.savings.cost is None else f", ${r.savings.cost:,.4f}"
        estimate = " (estimated)" if r.savings.estimated else ""
        saved = f"<span>saves {r.savings.tokens:,} tokens{estimate}{cost}</span>"
    meta = (
        f'<p class="meta"><span>model {escape(r.model or "unknown")}</span><span>{r.messages} messages</span>'
        f"<span>{len(r.rows)} tool calls</span><span>{r.requests} recorded requests</span>{saved}</p>"
    )
    by_detector = "".join(
        f"<li><b>{escape(d)}</b> "
        + ", ".join(f"{a} at step {s}" for a, s in sorted(steps.items(), key=lambda x: x[1]))
        + "</li>"
        for d, steps in r.by_detector.items()
    )
    detectors = f'<ul class="detectors">{by_detector}</ul>' if by_detector else ""
    table = _timeline(r)
    return (
        f'<section class="conversation {state}" id="conv-{n}" data-affected="{str(r.affected).lower()}">'
        f'<h2>{escape(r.label)} <span class="badge {state}">{state}</span></h2>{meta}{detectors}'
        f"<details{' open' if r.affected else ''}><summary>timeline</summary>{table}</details></section>"
    )


def _timeline(r: Result) -> str:
    return timeline_table(r.rows, r.cut, _stop(r) if r.cut is not None else "")


def _stop(r: Result) -> str:
    """The stop line names what the summary's columns name for that step."""
    if r.first.get("terminate", (None,))[0] == r.cut_step:
        return f"the run would have been stopped at step {r.cut_step}"
    return f"the call at step {r.cut_step} would have been vetoed and the model asked again"
