"""The request path: rebuild what the model has seen, judge the executed history, plan the edit.

Protocol-neutral: the request's items are opaque; the adapter reads them into turns and makes
every edit (anchor, replaced result, re-shown vetoed exchange)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gateway.config import SessionsConfig
from gateway.guard import compaction, prefix
from gateway.guard.history import HistoryCache
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy, Judgement
from gateway.protocols.roles import Adapter
from gateway.state.base import EMPTY, HistoryMark, SessionState, StateStore, VetoRecord
from gateway.state.bounds import VETO_TEXT_CHARS, bounded
from gateway.state.session import CLIENT_HEADER, DEFAULT_SOURCES, credential_hash, is_fingerprint, session_id
from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation, Trace, Turn, WarnedCall


@dataclass(slots=True)
class RequestPlan:
    policy: EffectivePolicy
    session: str
    payload: dict[str, Any]
    client_messages: list[Any]  # the items the client sent (after any ``history`` the adapter supplied)
    messages: list[Any]  # the items the model will see: vetoed exchanges re-shown, anchors added
    conversation: Conversation
    trace: Trace
    judgement: Judgement
    client_turns: tuple[Turn, ...] = ()
    changed: bool = False
    notes: list[str] = field(default_factory=list)  # degradations worth a log field
    client_hash: str | None = None  # prefix hash of all client messages (where vetoes anchor)

    @property
    def action(self) -> Action:
        return self.judgement.action


async def plan_request(
    adapter: Adapter,
    payload: dict[str, Any],
    items: list[Any],
    headers: dict[str, str],
    path: str,
    policies,
    store: StateStore,
    log,
    sessions: SessionsConfig = DEFAULT_SOURCES,
    history: HistoryCache | None = None,
    size: int = 0,
) -> RequestPlan:
    """``items``: the conversation as the model will see it before any edit (``Requests.items``,
    after the entries ``History.history`` supplied)."""
    policy = policies.resolve(
        agent=headers.get("x-loopguard-agent"),
        api_key_sha256=headers.get(CLIENT_HEADER) or credential_hash(headers),
        model=adapter.requests.model(payload) or None,  # Google's is in the path
        path=path,
    )
    length = len(items)
    if history is not None:
        parsed = history.parse(adapter, payload, items, size, policy.trace_settings)
        conv, memo, digest = parsed.conv, parsed.events, parsed.digest
    else:
        conv, memo = adapter.requests.conversation(payload, items), None
        digest = prefix.prefix_hashes_at(conv.turns, length, (length,))[length]
    client_conv = conv
    # Read through the profile of the agent that sent it (its tools, its result envelope): the
    # derived policy travels with the plan, so the reply's calls are read the same way.
    policy = policy.for_agent(conv, headers.get("user-agent", ""))
    session = _protocol_session(
        adapter, session_id(headers, payload, conv, sessions, adapter.requests.user(payload), memo)
    )
    mark = HistoryMark(length, digest)
    state = await _session_state(session, mark, store, log)
    tracked = _track(state, conv, mark, session, store, log)
    state = _run_state(state, tracked, session, store, log)
    vetoes = state.vetoes
    messages = prefix.insert_vetoes(items, tracked.hashes, vetoes) if vetoes else items
    if messages is not items:
        conv, memo = adapter.requests.conversation(payload, messages), None
    trace = build_trace(conv, policy.trace_settings, memo)
    if tracked.compacted_at is not None:
        start = compaction.shown_index(tracked.compacted_at, tracked.hashes, vetoes)
        trace = replace(trace, compacted_at=start)
    if state.warned or state.verdict is not None:
        trace = replace(trace, warned=state.warned, verdict=state.verdict)
    judgement = policy.judge(trace)
    plan = RequestPlan(
        policy,
        session,
        payload,
        items,
        messages,
        conv,
        trace,
        judgement,
        client_conv.turns,
        changed=messages is not items,
        client_hash=mark.digest,
    )
    _apply_history_action(adapter, plan)
    _remember_warning(plan, store, log)
    return plan


async def _session_state(session: str, mark: HistoryMark, store: StateStore, log) -> SessionState:
    """Vetoed exchanges and the previous history mark, swapped for ``mark``: one round trip."""
    try:
        return await store.session_state(session, mark)
    except Exception as exc:  # stores degrade by themselves; this guards a foreign one
        log.warning("state_unavailable", op="session_state", error=type(exc).__name__)
        return EMPTY


def _track(
    state: SessionState, conv: Conversation, mark: HistoryMark, session: str, store: StateStore, log
) -> compaction.Tracked:
    """Compare the history with the session's previous request; a compaction marker that starts
    or stops applying is written fire-and-forget, off the request's path."""
    tracked = compaction.track(state, conv.turns, mark.length, mark.digest, not is_fingerprint(session))
    if tracked.compacted_now:
        log.info("history_compacted", session=session, before=state.mark.length, after=mark.length)
    if tracked.marker_changed:
        try:
            store.mark_compacted(session, tracked.marker)
        except Exception as exc:
            log.warning("state_unavailable", op="mark_compacted", error=type(exc).__name__)
    return tracked


def _run_state(state: SessionState, tracked: compaction.Tracked, session: str, store: StateStore, log) -> SessionState:
    """The vetoed exchanges and warned calls this request may use. A fingerprint session is
    shared by every run of the same task (same system prompt, first user message and tools: a
    fleet running a job twice, a retried job), so its vetoes hold only while requests continue
    the run that was refused: a request that neither extends the session's previous one nor
    compacts it (a new run starts with a shorter history, and may replay the first run's turns
    exactly) ends that run, and its vetoes and warnings are forgotten. A session the client
    named keeps them: it says which run a request belongs to (and a warned call is only ever
    matched by its id among the calls of the run being judged)."""
    if not (state.vetoes or state.warned or state.verdict) or tracked.continues or not is_fingerprint(session):
        return state
    log.info("session_new_run", session=session, vetoes_dropped=len(state.vetoes))
    try:
        store.end_run(session)
    except Exception as exc:
        log.warning("state_unavailable", op="end_run", error=type(exc).__name__)
    return replace(state, vetoes=(), warned=(), verdict=None)


def _apply_history_action(adapter: Adapter, plan: RequestPlan) -> None:
    """Warn with an anchor; an executed call already at reject level gets its result replaced."""
    action, finding = plan.judgement.action, plan.judgement.finding
    if finding is None or action in (Action.PASS, Action.TERMINATE):
        return
    policy = plan.policy
    if action == Action.REJECT:
        latest = plan.trace.latest
        index = adapter.edits.result_index(plan.messages, latest.call_id, latest.message_index) if latest else None
        if index is not None:
            text = policy.render("reject", finding)
            plan.messages = adapter.edits.replace_result(plan.messages, index, text, latest.call_id)
            plan.changed = True
    text = policy.render("warn", finding)
    plan.messages = adapter.edits.add_anchor(plan.messages, text, policy.interventions.warn.placement)
    plan.changed = True


def _remember_warning(plan: RequestPlan, store: StateStore, log) -> None:
    """A warning went into the forwarded request: remember which call's pattern it named, so a
    pattern that goes on after it escalates (in this request's proposals and in later requests,
    on any replica). Written fire-and-forget; the anchor itself is never in the client's history."""
    judgement = plan.judgement
    finding = judgement.finding
    if finding is None or judgement.action not in (Action.WARN, Action.REJECT):
        return
    event = next((e for e in reversed(plan.trace.events) if e.step in finding.steps), plan.trace.latest)
    if event is None or any(w.call_id == event.call_id for w in plan.trace.warned):
        return
    warned = WarnedCall(event.call_id, finding.detector)
    plan.trace = replace(plan.trace, warned=(*plan.trace.warned, warned))
    try:
        store.add_warned(plan.session, warned)
    except Exception as exc:
        log.warning("state_unavailable", op="add_warned", error=type(exc).__name__)


def retrace(plan: RequestPlan, conv: Conversation) -> Trace:
    """The trace of ``conv`` (the plan's conversation after an edit, e.g. a vetoed exchange
    shown), keeping what the request path learnt from the session's state."""
    trace = build_trace(conv, plan.policy.trace_settings)
    return replace(trace, compacted_at=plan.trace.compacted_at, warned=plan.trace.warned, verdict=plan.trace.verdict)


def veto_record(plan: RequestPlan, exchange: list[Any], ids: frozenset[str] = frozenset({"id"})) -> VetoRecord:
    """Remember a refused call's ``exchange`` (``Edits.veto_exchange``) so later requests of
    the conversation show it to the model, right after the client items of this request.
    ``ids``: the adapter's id fields (``Declaration.id_fields``)."""
    anchor = plan.client_messages
    digest = plan.client_hash
    if digest is None:
        digest = prefix.prefix_hashes_at(plan.client_turns, len(anchor), (len(anchor),))[len(anchor)]
    # Stored bounded in bytes (``state.bounds``): this request showed the exchange whole.
    return VetoRecord(len(anchor), digest, tuple(bounded(exchange, VETO_TEXT_CHARS)), ids)


def _protocol_session(adapter: Adapter, session: str) -> str:
    """Each protocol's conversations are sessions of their own: a session's stored vetoed
    exchanges are entries in its protocol's wire format, and two protocols may see the same
    session header or conversation opening (``Declaration.session_prefix``)."""
    return f"{adapter.name}:{session}" if adapter.declared.session_prefix else session  # "responses:f:..."
