"""The fleet's memory in one process (``state.backend: memory``): the rules of
``gateway.state.fleet``, kept in ``Shares`` so each tenant's entries are bounded on their own
(its least recently failing evicted first) and all tenants together fairly."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from gateway.state.fleet import (
    NOTHING,
    STOPS_PER_AGENT,
    Change,
    Outcome,
    Report,
    Rule,
    ToolHealth,
    entry_id,
    tool_key,
)
from gateway.state.shares import Shares
from gateway.trace.fleet import StoppedLoop

MAX_ENTRIES = 100_000  # every tenant's entries together (fair share beyond it)
MAX_AGENTS = 100_000


@dataclass(slots=True)
class _Entry:
    tool: str
    endpoint: str
    shape: str
    first: float
    last: float
    sample: str
    calls: int = 0
    down_since: float = 0.0
    sessions: dict[str, float] = field(default_factory=dict)  # session -> last failure

    def health(self, tenant: str, now: float, window_s: float) -> ToolHealth:
        live = sum(1 for at in self.sessions.values() if at > now - window_s)
        return ToolHealth(
            tenant,
            self.tool,
            self.endpoint,
            self.shape,
            live,
            self.calls,
            self.first,
            self.last,
            self.sample,
            self.down_since,
        )


class MemoryFleet:
    def __init__(self, max_entries: int = MAX_ENTRIES, max_agents: int = MAX_AGENTS) -> None:
        self._entries: Shares[_Entry] | None = None  # made with the first rule's tenant caps
        self._stops: Shares[tuple[StoppedLoop, ...]] | None = None
        self.max_entries, self.max_agents = max_entries, max_agents
        self.evictions = 0

    async def observe(
        self,
        tenant: str,
        session: str,
        outcomes: tuple[Outcome, ...],
        watch: tuple[tuple[str, str], ...],
        agent: str,
        now: float,
        rule: Rule,
    ) -> Report:
        entries = self._kept(rule)
        changes = self._expire(entries, tenant, now, rule)
        for outcome in outcomes:
            if outcome.ok:
                changes += self._cleared(entries, tenant, outcome, now, rule)
            else:
                changes += self._failed(entries, tenant, session, outcome, now, rule)
        keys = {tool_key(o.tool, o.endpoint) for o in outcomes} | {tool_key(*w) for w in watch}
        down = tuple(
            entry.health(tenant, now, rule.window_s)
            for _, entry in entries.oldest(tenant)
            if entry.down_since and tool_key(entry.tool, entry.endpoint) in keys
        )
        stopped = self._stopped(tenant, agent, now, rule) if agent else ()
        if not (down or changes or stopped):
            return NOTHING
        return Report(down, tuple(changes), stopped)

    async def health(self, tenant: str | None, now: float, rule: Rule) -> tuple[list[ToolHealth], list[Change]]:
        entries = self._kept(rule)
        tenants = [tenant] if tenant is not None else entries.tenants()
        changes = [change for one in tenants for change in self._expire(entries, one, now, rule)]
        found = [
            entry.health(one, now, rule.window_s)
            for one in tenants
            for _, entry in entries.oldest(one)
            if entry.down_since
        ]
        return found, changes

    def stop(self, tenant: str, agent: str, loop: StoppedLoop, rule: Rule) -> None:
        stops = self._kept_stops(rule)
        key = f"{tenant}\0{agent}"
        earlier = stops.get(key) or ()
        kept = tuple(s for s in earlier if s.at > loop.at - rule.recall_s and s.call_id != loop.call_id)
        self.evictions += len(stops.put(key, (*kept, loop)[-STOPS_PER_AGENT:], 1))

    # --- the rules ------------------------------------------------------------------------

    def _expire(self, entries: Shares[_Entry], tenant: str, now: float, rule: Rule) -> list[Change]:
        """Entries without a failure for the window: forgotten; the down ones came back."""
        changes: list[Change] = []

        def silent(entry: _Entry) -> bool:
            if entry.last > now - rule.window_s:
                return False
            if entry.down_since:
                changes.append(Change("recovered", "silence", entry.health(tenant, now, rule.window_s)))
            return True

        entries.drop_front(tenant, silent)
        return changes

    def _cleared(self, entries: Shares[_Entry], tenant: str, outcome: Outcome, now: float, rule: Rule) -> list[Change]:
        prefix = tool_key(outcome.tool, outcome.endpoint)
        gone = [(key, entry) for key, entry in entries.oldest(tenant) if key.startswith(tenant + "\0" + prefix)]
        for key, _ in gone:
            entries.pop(key)
        return [Change("recovered", "success", e.health(tenant, now, rule.window_s)) for _, e in gone if e.down_since]

    def _failed(
        self, entries: Shares[_Entry], tenant: str, session: str, outcome: Outcome, now: float, rule: Rule
    ) -> list[Change]:
        key = f"{tenant}\0{entry_id(outcome.tool, outcome.endpoint, outcome.shape)}"
        entry = entries.get(key)
        if entry is None:
            entry = _Entry(outcome.tool, outcome.endpoint, outcome.shape, now, now, outcome.sample)
        sessions = {s: at for s, at in entry.sessions.items() if at > now - rule.window_s}
        sessions.pop(session, None)
        sessions[session] = now  # insertion order: oldest first
        while len(sessions) > rule.sessions_kept:
            del sessions[next(iter(sessions))]
        entry = replace(entry, sessions=sessions, last=now, calls=entry.calls + 1)
        changes = []
        if not entry.down_since and len(sessions) >= rule.sessions:
            entry.down_since = now
            changes.append(Change("down", "sessions", entry.health(tenant, now, rule.window_s)))
        evicted = entries.put(key, entry, 1)  # most recently failing last
        self.evictions += len(evicted)
        return changes

    def _stopped(self, tenant: str, agent: str, now: float, rule: Rule) -> tuple[StoppedLoop, ...]:
        stops = self._kept_stops(rule).get(f"{tenant}\0{agent}") or ()
        return tuple(s for s in stops if s.at > now - rule.recall_s)

    def _kept(self, rule: Rule) -> Shares[_Entry]:
        if self._entries is None:
            self._entries = Shares(self.max_entries, rule.tenant_max_tools)
        return self._entries

    def _kept_stops(self, rule: Rule) -> Shares[tuple[StoppedLoop, ...]]:
        if self._stops is None:
            self._stops = Shares(self.max_agents, rule.tenant_max_agents)
        return self._stops
