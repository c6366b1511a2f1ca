"""The request path: rebuild what the model has seen, judge the executed history, plan the edit.

Protocol-neutral: the request's items are opaque; the adapter reads them into turns and makes
every edit (anchor, replaced result, re-shown vetoed exchange).

``plan_request`` is the request path's one call, for the gateway and the LiteLLM guardrail
alike: it reads the session's memory and writes what this request adds to it (a compaction
marker, the end of a run, a warning given) through ``gateway.guard.store``, and returns the
plan built whole and frozen (``gateway.guard.plan``); the caller only applies it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Protocol

from gateway.config import SessionsConfig
from gateway.fleet.service import Fleet
from gateway.guard import compaction_watch, judged, prefix
from gateway.guard import store as memory
from gateway.guard.history import HistoryCache
from gateway.guard.plan import RequestPlan, warning_given, with_warned
from gateway.policy.actions import Action
from gateway.policy.engine import EffectivePolicy
from gateway.protocols.registry import KEY_PLACES
from gateway.protocols.roles import Adapter
from gateway.state.base import HistoryMark, SessionState, StateStore
from gateway.state.session import CLIENT_HEADER, DEFAULT_SOURCES, client_namespace, is_fingerprint, session_id
from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation


class Policies(Protocol):
    """What picks a request's policy: the loaded ``Policy`` (replay passes one that shows a
    shadow policy enforced)."""

    def resolve(
        self, agent: str | None = None, api_key_sha256: str | None = None, model: str | None = None, path: str = ""
    ) -> EffectivePolicy: ...


async def plan_request(
    adapter: Adapter,
    payload: dict[str, Any],
    items: list[Any],
    headers: dict[str, str],
    path: str,
    policies: Policies,
    store: StateStore,
    log: Any,
    sessions: SessionsConfig = DEFAULT_SOURCES,
    history: HistoryCache | None = None,
    size: int = 0,
    fleet: Fleet | None = None,
) -> RequestPlan:
    """``items``: the conversation as the model will see it before any edit (``Requests.items``,
    after the entries ``History.history`` supplied). ``fleet``: the fleet view (gateway/fleet),
    whose checks judge with the policy's detectors."""
    if not headers.get(CLIENT_HEADER) and (client := KEY_PLACES.credential_hash(headers)):
        headers = {**headers, CLIENT_HEADER: client}  # a caller without the client-key gate
    policy = policies.resolve(
        agent=headers.get("x-loopguard-agent"),
        api_key_sha256=headers.get(CLIENT_HEADER),
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
    state = await memory.session_state(store, session, mark, log)
    tracked = _track(state, conv, mark, session, store, log)
    state = _run_state(state, tracked, session, store, log)
    vetoes = state.vetoes
    messages = prefix.insert_vetoes(items, tracked.hashes, vetoes) if vetoes else items
    if messages is not items:
        conv, memo = adapter.requests.conversation(payload, messages), None
    trace = build_trace(conv, policy.trace_settings, memo)
    if tracked.compacted_at is not None:
        start = compaction_watch.shown_index(tracked.compacted_at, tracked.hashes, vetoes)
        trace = replace(trace, compacted_at=start)
    if state.warned or state.verdict is not None:
        trace = replace(trace, warned=state.warned, verdict=state.verdict)
    agent = ""
    if fleet is not None:
        policy = fleet.policy(policy)
        agent, facts = await fleet.observe(
            client_namespace(headers),
            session,
            trace,
            policy.trace_settings,
            headers.get("x-loopguard-agent", ""),
            client_conv,
            memo,
        )
        if facts is not None:
            trace = replace(trace, fleet=facts)
    judgement = judged.judge(policy, trace, memo)
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
        agent=agent,
    )
    plan = _with_history_action(adapter, plan)
    warned = warning_given(plan)
    if warned is None:
        return plan
    memory.add_warned(store, session, warned, log)
    return with_warned(plan, warned)


def _with_history_action(adapter: Adapter, plan: RequestPlan) -> RequestPlan:
    """The history's action written into what the model sees: warn with an anchor; an executed
    call already at reject level also gets its result replaced. ``plan`` when there is none."""
    action, finding = plan.judgement.action, plan.judgement.finding
    if finding is None or action in (Action.PASS, Action.TERMINATE):
        return plan
    policy, messages = plan.policy, plan.messages
    if action == Action.REJECT:
        latest = plan.trace.latest
        index = adapter.edits.result_index(messages, latest.call_id, latest.message_index) if latest else None
        if latest is not None and index is not None:
            text = policy.render("reject", finding)
            messages = adapter.edits.replace_result(messages, index, text, latest.call_id)
    text = policy.render("warn", finding)
    messages = adapter.edits.add_anchor(messages, text, policy.interventions.warn.placement)
    return replace(plan, messages=messages, changed=True)


def _track(
    state: SessionState, conv: Conversation, mark: HistoryMark, session: str, store: StateStore, log: Any
) -> compaction_watch.Tracked:
    """Compare the history with the session's previous request; a compaction marker that starts
    or stops applying is written fire-and-forget, off the request's path."""
    tracked = compaction_watch.track(state, conv.turns, mark.length, mark.digest, not is_fingerprint(session))
    if tracked.compacted_now:
        log.info(
            "history_compacted", session=session, before=state.mark.length if state.mark else None, after=mark.length
        )
    if tracked.marker_changed:
        memory.mark_compacted(store, session, tracked.marker, log)
    return tracked


def _run_state(
    state: SessionState, tracked: compaction_watch.Tracked, session: str, store: StateStore, log: Any
) -> SessionState:
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
    memory.end_run(store, session, log)
    return replace(state, vetoes=(), warned=(), verdict=None)


def _protocol_session(adapter: Adapter, session: str) -> str:
    """Each protocol's conversations are sessions of their own: a session's stored vetoed
    exchanges are entries in its protocol's wire format, and two protocols may see the same
    session header or conversation opening (``Declaration.session_prefix``)."""
    return f"{adapter.name}:{session}" if adapter.declared.session_prefix else session  # "responses:f:..."
