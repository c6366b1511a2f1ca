"""One run's page, rendered on the server: how it ended, what it saved, each finding with its
evidence and the text sent, and the timeline of its tool calls in the replay report's rendering
(``gateway.replay.timeline``), marks on the steps where actions were applied."""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.console.view import STOPS, Item
from gateway.policy.messages import compact_steps
from gateway.replay.model import Mark, Row
from gateway.replay.timeline import timeline_table

ENDINGS = {
    "answer": "terminated: the model's own final answer (tools closed)",
    "reply": "terminated: the termination reply (template)",
    "error": "terminated: a loop_detected error (422)",
}


def outcome(events: list[dict[str, Any]]) -> str:
    ended = next((e for e in reversed(events) if e.get("action") == "terminate"), None)
    if ended is not None:
        return ENDINGS.get(ended.get("terminate") or "", "terminated")
    actions = [e.get("action") for e in events]
    if "reject" in actions:
        return "a call was vetoed; the model was asked again and the run went on"
    if "warn" in actions:
        return "warned; no veto or termination followed (recovered so far)"
    return "held back: shadow mode or max_action (nothing was done to traffic)"


def rows_of(details: list[dict[str, Any]], events: list[dict[str, Any]]) -> tuple[list[Row], int]:
    """The run's calls by step (a later timeline wins for a step both have) with the actions
    applied marked on the step each finding ended at; and how many older calls were not kept."""
    by_step: dict[int, Row] = {}
    omitted = 0
    for d in details:  # oldest first
        omitted = d.get("omitted", 0)
        for row in d.get("rows", []):
            if not isinstance(row, list) or len(row) != 7:
                continue  # written by another version: shown without it
            step, message, tool, args, result, repeat, flag = row
            shown = result if flag != "proposed" else "(proposed: judged before the agent ran it)"
            by_step[step] = Row(step, message, tool, args or "", shown, repeat, dropped=False)
    for e in events:
        if e.get("action") == "pass" or not e.get("steps"):
            continue
        row = by_step.get(max(e["steps"]))
        if row is not None and not any(m.action == e["action"] and m.detector == e["detector"] for m in row.marks):
            row.marks.append(
                Mark(e["action"], e["detector"], e.get("phase", ""), e.get("count", 0), e.get("description", ""))
            )
    return [by_step[s] for s in sorted(by_step)], omitted


def render(
    session: str,
    run: int,
    items: list[Item],
    details: dict[str, dict[str, Any]],
    savings: list[dict[str, Any]],
    labelling: str = "",
) -> str:
    """``labelling``: the operator's form to label the run (``gateway.console.labels``)."""
    events = [i.data for i in items]
    rows, omitted = rows_of([details[i.id] for i in items if i.id in details], events)
    first = events[0] if events else {}
    tokens = sum(int(s.get("tokens") or 0) for s in savings)
    priced = [float(s["cost_usd"]) for s in savings if s.get("cost_usd") is not None]
    cost = f"${sum(priced):,.4f}" if priced else "not priced"
    meta = "".join(
        f"<span>{escape(k)} <b>{escape(str(v))}</b></span>"
        for k, v in (
            ("tenant", first.get("tenant") or "-"),
            ("agent", first.get("agent") or "(default)"),
            ("protocol", first.get("protocol") or "-"),
            ("model", first.get("model") or "-"),
            ("policy", first.get("policy") or "-"),
        )
    )
    stopped = any(e.get("action") in STOPS for e in events)
    cards = (
        f'<div class="stat" data-stat="outcome"><span class="k">how it ended</span>'
        f'<span class="v small" id="outcome">{escape(outcome(events))}</span></div>'
        f'<div class="stat" data-stat="tokens saved"><span class="v" id="tokens-saved">{tokens:,}</span>'
        f'<span class="k">tokens saved</span><span class="h">one more looping round, a lower bound</span></div>'
        f'<div class="stat" data-stat="cost saved"><span class="v" id="cost-saved">{escape(cost)}</span>'
        f'<span class="k">cost saved</span><span class="h">{"USD" if stopped else "nothing stopped"}</span></div>'
    )
    note = f'<p class="note">{omitted} earlier calls of this run are not kept.</p>' if omitted else ""
    findings = "".join(_finding(i.data, details.get(i.id)) for i in items)
    return (
        f'<header><p class="crumbs"><a href="/ui">&larr; interventions</a></p>'
        f'<h1>Run <code>{escape(session)}</code> &middot; prompt {run}</h1><p class="meta">{meta}</p></header>'
        f'<section class="totals">{cards}</section>{labelling}'
        f'<section class="findings"><h2>Findings</h2>{findings}</section>'
        f'<section class="conversation affected"><h2>Timeline</h2>{note}'
        f"{timeline_table(rows, marks='action')}</section>"
    )


def _finding(e: dict[str, Any], detail: dict[str, Any] | None) -> str:
    action = e.get("action", "pass")
    held = f" <small>(would {escape(e.get('would', ''))}: held back)</small>" if e.get("shadow") else ""
    sent = ""
    if detail is not None:
        text = detail.get("text")
        body = f'<pre class="sent">{escape(text)}</pre>' if text else ""
        sent = f'<p class="said">{escape(detail.get("text_kind", ""))}</p>{body}'
    return (
        f'<article class="finding" data-action="{escape(action)}" data-detector="{escape(e.get("detector", ""))}">'
        f'<p><span class="mark mark-{escape(action)}">{escape(action)} &middot; {escape(e.get("detector", ""))} '
        f"&times;{e.get('count', 0)}<small>{escape(e.get('phase', ''))}</small></span>{held} "
        f"<time>{escape(e.get('time', ''))}</time></p>"
        f"<p>{escape(e.get('description', ''))}</p>"
        f'<p class="evidence">evidence: <b>{escape(e.get("tool", ""))}</b> at steps '
        f"{escape(compact_steps(e.get('steps', [])))}</p>{sent}</article>"
    )
