"""The guard's one door to the state store: every read and write the request and response paths
make of a session's memory, and of which tenant created which server-side object.

The rule: outside ``gateway.state`` only this module calls a ``StateStore`` method (or a
``gateway.state`` helper that takes the store). The pipeline and the LiteLLM guardrail hold the
store only to hand it here, or to a protocol's server-kept history (``History.history`` /
``History.remember``), which keeps its own records. A store that fails degrades the guard, never
the request: each call logs ``state_unavailable`` with its operation and goes on without it
(``claim`` excepted: its caller decides).
"""

from __future__ import annotations

from typing import Any

from gateway.state import claims
from gateway.state.base import EMPTY, HistoryMark, SessionState, StateStore, VetoRecord
from gateway.trace.model import WarnedCall


async def session_state(store: StateStore, session: str, mark: HistoryMark, log: Any) -> SessionState:
    """Vetoed exchanges and the previous history mark, swapped for ``mark``: one round trip."""
    try:
        return await store.session_state(session, mark)
    except Exception as exc:  # stores degrade by themselves; this guards a foreign one
        _unavailable(log, "session_state", exc)
        return EMPTY


def mark_compacted(store: StateStore, session: str, marker: HistoryMark | None, log: Any) -> None:
    """A compaction marker that starts (or stops: None) applying; fire-and-forget."""
    try:
        store.mark_compacted(session, marker)
    except Exception as exc:
        _unavailable(log, "mark_compacted", exc)


def end_run(store: StateStore, session: str, log: Any) -> None:
    """The session's run is over: its vetoes and warnings are forgotten; fire-and-forget."""
    try:
        store.end_run(session)
    except Exception as exc:
        _unavailable(log, "end_run", exc)


def add_warned(store: StateStore, session: str, warned: WarnedCall, log: Any) -> None:
    """A warning went into the forwarded request (on any replica, a pattern that goes on after
    it escalates); fire-and-forget. The anchor itself is never in the client's history."""
    try:
        store.add_warned(session, warned)
    except Exception as exc:
        _unavailable(log, "add_warned", exc)


async def add_veto(store: StateStore, session: str, record: VetoRecord, log: Any) -> None:
    """A refused call's exchange, shown to the model in the session's later requests."""
    try:
        await store.add_veto(session, record)
    except Exception as exc:  # the veto still holds for this request; later ones may not see it
        _unavailable(log, "add_veto", exc)


async def owns(store: StateStore, namespace: str, kind: str, ident: str, log: Any) -> bool:
    """Did the tenant ``namespace`` create the object? A store that cannot tell says yes
    (``gateway.state.claims``): an unavailable store must not turn a tenant's own object into
    a 404, and ids are unguessable."""
    try:
        return await claims.owned(store, namespace, kind, ident)
    except Exception as exc:
        _unavailable(log, "owned", exc)
        return True


async def claim(store: StateStore, namespace: str, kind: str, ident: str) -> None:
    """Note an object the reply created as the tenant's own (raises when the store does)."""
    await claims.claim(store, namespace, kind, ident)


def _unavailable(log: Any, op: str, exc: Exception) -> None:
    log.warning("state_unavailable", op=op, error=type(exc).__name__)
