"""The self-contained HTML report: totals, the scores when runs are labelled (the healthy runs the
policy would have disturbed first), then one timeline per run (tool calls as rows, repeats
highlighted, the step where each action would fire marked). Over ``ALL_TIMELINES`` runs, only the
runs the policy acted on and those labelled loop or borderline get a timeline; every run has its
line in the index. Inline CSS, no script, no external assets: it can be mailed or attached to a
ticket as one file."""

from __future__ import annotations

from html import escape

from gateway.replay.model import ACTIONS, Result
from gateway.replay.report_scores import scores_section
from gateway.replay.style import CSS
from gateway.replay.timeline import timeline_table

ALL_TIMELINES = 200  # runs up to which every run gets its timeline


def render_html(
    results: list[Result], *, policy: str, sources: list[str], unknown_models: list[str], generated: str
) -> str:
    results = sorted(results, key=_severity)  # the conversations to look at first, first
    body = [_header(policy, sources, generated), _totals(results, unknown_models)]
    if any(r.label for r in results):
        body.append(scores_section(results))
    body.append(_index(results))
    shown = [(n, r) for n, r in enumerate(results, 1) if _timeline_shown(r, len(results))]
    if len(shown) < len(results):
        body.append(
            f'<p class="note">{len(results) - len(shown)} runs the policy left alone and not labelled a loop '
            f"have no timeline here (over {ALL_TIMELINES} runs).</p>"
        )
    body += [_conversation(n, r) for n, r in shown]
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>LoopGuard replay: {escape(policy)}</title><style>{CSS}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _timeline_shown(result: Result, runs: int) -> bool:
    return runs <= ALL_TIMELINES or result.affected or result.label in ("loop", "borderline")


def _severity(result: Result) -> tuple[int, int, int]:
    """Healthy runs the policy disturbed first, then by the strongest action, earliest."""
    strongest = max((ACTIONS.index(a) + 1 for a in result.first), default=0)
    first = min((step for step, _ in result.first.values()), default=0)
    return (0 if result.label == "healthy" and result.affected else 1, -strongest, first)


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
        f'<tr class="{"affected" if r.affected else "healthy"}"><td>{_link(n, r, len(results))}</td>'
        f"<td>{escape(r.label or '-')}</td><td>{escape(r.agent)}</td><td>{len(r.rows)}</td>"
        + "".join(f"<td>{_first(r, a)}</td>" for a in ACTIONS)
        + f"<td>{escape(', '.join(r.detectors) or '-')}</td></tr>"
        for n, r in enumerate(results, 1)
    )
    return (
        '<section class="index"><table><thead><tr><th>run</th><th>label</th><th>agent</th><th>tool calls</th><th>warn</th>'
        "<th>reject</th><th>terminate</th><th>detector</th></tr></thead><tbody>" + rows + "</tbody></table></section>"
    )


def _link(n: int, result: Result, runs: int) -> str:
    if _timeline_shown(result, runs):
        return f'<a href="#conv-{n}">{escape(result.name)}</a>'
    return escape(result.name)


def _labelled(result: Result) -> str:
    if not result.label:
        return ""
    at = f" from call {result.loop_at}" if result.loop_at is not None else ""
    return f' <span class="badge label-{escape(result.label)}">labelled {escape(result.label)}{at}</span>'


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
        f'<h2>{escape(r.name)} <span class="badge {state}">{state}</span>{_labelled(r)}</h2>{meta}{detectors}'
        f"<details{' open' if r.affected else ''}><summary>timeline</summary>{table}</details></section>"
    )


def _timeline(r: Result) -> str:
    return timeline_table(r.rows, r.cut, _stop(r) if r.cut is not None else "")


def _stop(r: Result) -> str:
    """The stop line names what the summary's columns name for that step."""
    if r.first.get("terminate", (None,))[0] == r.cut_step:
        return f"the run would have been stopped at step {r.cut_step}"
    return f"the call at step {r.cut_step} would have been vetoed and the model asked again"
