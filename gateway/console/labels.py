"""Operators label live runs: on a run's page, ``loop``, ``healthy`` or ``borderline``, and for a
loop the step of the timeline where it began. Kept in the state store beside the console's other
state (in memory, or shared by every replica on Redis); ``loopguard labels export`` reads them
from ``/ui/api/labels`` and writes the file ``loopguard replay --labels`` reads.

A label names its run by the session: the id the client sent in its session header where it
named one (what its own log may record), else the gateway's session key. Labels of several
prompts of one session are one run's for replay, which replays a whole session: it is a loop if
any prompt was, from the first looping prompt's step.
"""

from __future__ import annotations

import time
from html import escape
from typing import Any

import orjson

from gateway.replay.labels import LABELS
from gateway.state.base import StateStore

_RANK = {"loop": 0, "borderline": 1, "healthy": 2}
MAX_SESSION = 512  # characters of a session id a label keeps (the gateway's keys are shorter)


def key(session: str, run: int) -> str:
    return f"{session}#{run}"


async def mark(store: StateStore, session: str, run: int, label: str, loop_at: int | None, **about: Any) -> None:
    entry = {"session": session, "run": run, "label": label, "loop_at": loop_at, "time": _now(), **about}
    await store.save_label(key(session, run), orjson.dumps(entry))


async def kept(store: StateStore) -> dict[str, dict[str, Any]]:
    """Every kept label by run key; one that does not read is left out."""
    found = {}
    for run, raw in (await store.labels()).items():
        try:
            entry = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(entry, dict) and entry.get("label") in LABELS:
            found[run] = entry
    return found


def client_session(session: str) -> str:
    """The id the client named in its session header (``...h:<id>``), else the session key."""
    head, sep, named = session.partition("h:")
    return named if sep and (not head or head.endswith(":")) else session


def export_rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per session (``run``, ``label``, ``loop_at``, ``note``), oldest label first."""
    by_session: dict[str, dict[str, Any]] = {}
    for entry in sorted(entries, key=lambda e: (str(e.get("session")), int(e.get("run") or 0))):
        run = client_session(str(entry.get("session")))
        chosen = by_session.get(run)
        if chosen is None or _RANK[entry["label"]] < _RANK[chosen["label"]]:
            note = f"console: prompt {entry.get('run')}, agent {entry.get('agent') or '-'}, marked {entry.get('time')}"
            by_session[run] = {"run": run, "label": entry["label"], "loop_at": entry.get("loop_at"), "note": note}
    return list(by_session.values())


def form(session: str, run: int, current: dict[str, Any] | None) -> str:
    """The run page's labelling form, and the label it has."""
    said = ""
    if current is not None:
        at = current.get("loop_at")
        began = f", from step {at + 1}" if isinstance(at, int) else ""
        said = (
            f'<p id="current-label" data-label="{escape(current["label"])}">labelled '
            f"<b>{escape(current['label'])}</b>{began} ({escape(str(current.get('time', '')))})</p>"
        )
    buttons = "".join(
        f'<button type="submit" name="label" value="{label}" id="label-{label}" class="quiet">{label}</button>'
        for label in LABELS
    )
    return (
        '<section class="panel labelling"><h2>Label this run</h2>'
        '<p class="note">For replay\'s scores (<code>loopguard labels export</code>): was it a loop?</p>'
        f'<form method="post" action="/ui/label" id="label-form">'
        f'<input type="hidden" name="session" value="{escape(session)}">'
        f'<input type="hidden" name="run" value="{run}">'
        '<label>a loop from step <input type="number" name="step" id="label-step" min="1"></label> '
        f"{buttons}</form>{said}</section>"
    )


def read_form(fields: dict[str, list[str]]) -> tuple[str, int, str, int | None] | str:
    """(session, run, label, loop_at) from the posted form, or what is wrong with it."""
    session = (fields.get("session") or [""])[0]
    label = (fields.get("label") or [""])[0]
    run, step = (fields.get("run") or [""])[0], (fields.get("step") or [""])[0].strip()
    if not session or len(session) > MAX_SESSION:
        return "session must name the run"
    if label not in LABELS:
        return f"label must be one of {', '.join(LABELS)}"
    if not run.isdigit() or int(run) < 1:
        return "run must be a prompt number (1, 2, ...)"
    if step and (not step.isdigit() or int(step) < 1):
        return "step must be a step of the timeline (1, 2, ...)"
    return session, int(run), label, int(step) - 1 if step else None


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
