"""The fleet view of one app: its door to the fleet's shared state, its audit events, and what
its metrics read.

``observe`` runs on the request path: one store round trip when the request carries something
the fleet must note or may answer, none otherwise. Each change the store answers (a tool down, a
tool back) is audited by the one replica whose observation made it.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from gateway.audit.bus import AuditBus
from gateway.audit.events import TOOL_DOWN, TOOL_RECOVERED, ToolHealthEvent, now_iso
from gateway.config import FleetConfig
from gateway.detectors.base import Finding
from gateway.fleet.checks import RECALLED
from gateway.fleet.checks import TOOL_DOWN as TOOL_DOWN_CHECK
from gateway.fleet.ladder import Ladder
from gateway.fleet.outcomes import agent_key, outcomes, repeats, watched
from gateway.policy.engine import EffectivePolicy
from gateway.state.fleet import Change, FleetStore, Rule, ToolHealth
from gateway.state.shares import tenant_of
from gateway.trace.fleet import DownTool, FleetFacts, StoppedLoop
from gateway.trace.model import Conversation, Trace
from gateway.trace.settings import TraceSettings

OTHER = "other"
_OWN = frozenset({TOOL_DOWN_CHECK, RECALLED})  # the fleet's own findings: not loops of the agent


class Fleet:
    def __init__(self, config: FleetConfig, store: FleetStore, audit: AuditBus, log: Any) -> None:
        self.config = config
        self.rule = Rule(
            config.sessions,
            config.window_minutes * 60,
            config.tenant_max_tools,
            config.recall_minutes * 60,
            config.tenant_max_agents,
        )
        self.store = store
        self.audit = audit
        self.log = log
        self.ladder = Ladder(config)
        # What this replica last learnt (the gauge): tenant -> (tool, endpoint) -> last failure.
        self.down_seen: dict[str, dict[tuple[str, str], float]] = {}
        self.failures: Counter[str] = Counter()  # failing remote calls by tool (bounded: ``label``)
        self._named: set[str] = set()  # tools with a series of their own: those that went down

    def policy(self, policy: EffectivePolicy) -> EffectivePolicy:
        """``policy`` with the fleet's checks in its plan."""
        return self.ladder(policy)

    async def observe(
        self,
        namespace: str,
        session: str,
        trace: Trace,
        settings: TraceSettings,
        agent: str,
        conv: Conversation,
        memo: dict[str, object] | None = None,
    ) -> tuple[str, FleetFacts | None]:
        """(the run's agent key, what the fleet knows for this request: None when nothing)."""
        key = agent_key(namespace, agent, conv, memo) if self.config.recall else ""
        fresh = outcomes(trace, settings)
        watch = watched(trace, fresh) if self.config.action != "none" else ()
        ask = key if key and repeats(trace) else ""
        if not (fresh or watch or ask):
            return key, None
        now = time.time()
        report = await self.store.observe(namespace, session, fresh, watch, ask, now, self.rule)
        self._changed(report.changes)
        self._seen(namespace, report.down)
        self._count(fresh)  # after: the call that took a tool down counts under its name
        down = _tools(report.down, self.rule) if self.config.action != "none" else ()
        if not (down or report.stopped):
            return key, None
        return key, FleetFacts(key, down, report.stopped, now)

    def stopped(self, agent: str, trace: Trace, finding: Finding) -> None:
        """A run of ``agent`` was stopped (rejected, ended) for ``finding``: its pattern is
        remembered, for the agent's next runs; fire and forget."""
        if not agent or not self.config.recall or finding.detector in _OWN:
            return
        steps = set(finding.steps)
        event = next((e for e in reversed(trace.events) if e.step in steps and not e.proposed), None)
        if event is None:
            return
        loop = StoppedLoop(
            finding.detector, event.tool, event.args_hash, event.failure_hash or "", event.call_id, time.time()
        )
        try:
            self.store.stop(tenant_of(agent), agent, loop, self.rule)
        except Exception as exc:  # a foreign store: the request goes on without it
            self.log.warning("state_unavailable", op="fleet_stop", error=type(exc).__name__)

    async def health(self, tenant: str | None) -> list[ToolHealth]:
        """The tools down now, for the console: ``tenant``'s (None: every tenant's)."""
        now = time.time()
        found, changes = await self.store.health(tenant, now, self.rule)
        self._changed(changes)
        return found

    def down_now(self) -> int:
        """Tools (with their server or host) down in every tenant, as this replica last learnt."""
        since = time.time() - self.rule.window_s
        return sum(1 for tools in self.down_seen.values() for last in tools.values() if last > since)

    def label(self, tool: str) -> str:
        return tool if tool in self._named else OTHER

    # --- what a report changes here -----------------------------------------------------------

    def _count(self, fresh: tuple[Any, ...]) -> None:
        for outcome in fresh:
            if not outcome.ok:
                self.failures[self.label(outcome.tool)] += 1

    def _seen(self, tenant: str, down: tuple[ToolHealth, ...]) -> None:
        for health in down:
            self.down_seen.setdefault(tenant, {})[health.tool, health.endpoint] = health.last
            if health.tool not in self._named and len(self._named) < self.config.metrics_tools:
                self._named.add(health.tool)

    def _changed(self, changes: tuple[Change, ...] | list[Change]) -> None:
        for change in changes:
            health = change.health
            if change.kind == "down":
                self._seen(health.tenant, (health,))
            else:
                self.down_seen.get(health.tenant, {}).pop((health.tool, health.endpoint), None)
            self.audit.emit(_event(change))


def _tools(found: tuple[ToolHealth, ...], rule: Rule) -> tuple[DownTool, ...]:
    """One per tool and endpoint: the shape most sessions saw."""
    best: dict[tuple[str, str], ToolHealth] = {}
    for health in found:
        key = (health.tool, health.endpoint)
        if key not in best or health.sessions > best[key].sessions:
            best[key] = health
    minutes = max(1, round(rule.window_s / 60))
    return tuple(DownTool(h.tool, h.endpoint, h.sessions, h.sample, minutes, h.down_since) for h in best.values())


def _event(change: Change) -> ToolHealthEvent:
    h = change.health
    return ToolHealthEvent(
        TOOL_DOWN if change.kind == "down" else TOOL_RECOVERED,
        now_iso(),
        h.tenant,
        h.tool,
        h.endpoint,
        h.sessions,
        h.calls,
        _iso(h.first),
        _iso(h.last),
        h.sample,
        change.reason,
    )


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
