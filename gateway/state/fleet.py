"""The fleet's shared memory (gateway/fleet): remote tools' recent failures across a tenant's
sessions, and the loops its agents' runs were stopped for.

Per tenant (the client namespace every session id starts with), per remote tool and the server
or host its calls name, per error shape: the sessions that saw that failure, when each last did,
when it was first and last seen, how many calls failed and one failure's text. An entry is
*down* once ``Rule.sessions`` distinct sessions saw it within ``Rule.window_s``; it stays down
until a success of the tool anywhere in the tenant (every shape of the tool is forgotten) or
``window_s`` without a failure (the entry expires). Each change is returned once, by the one
operation that made it (on Redis a script: atomic whichever replica runs it), so its audit
event is written once for the whole fleet.

Bounded like sessions: each tenant keeps at most ``Rule.tenant_max_tools`` entries and
``Rule.tenant_max_agents`` agents' stopped loops, its least recently failing / stopped first;
one tenant's flood of tool names or errors evicts only its own entries. Backends:
``fleet_memory.MemoryFleet`` (one process), ``fleet_redis.RedisFleet`` (shared by replicas).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from gateway.trace.fleet import StoppedLoop

SAMPLE_CHARS = 240  # one failure's text kept per entry: enough to recognise it, never a payload
STOPS_PER_AGENT = 8  # loops remembered per agent; a run is ended long before it has more
Reason = Literal["sessions", "success", "silence"]


@dataclass(frozen=True, slots=True)
class Outcome:
    """One remote call's result seen in a request: ``ok``, or failed with ``shape`` (the
    failure's hash without volatile parts: ``ToolEvent.failure_hash``) and its text."""

    tool: str
    endpoint: str
    ok: bool
    shape: str = ""
    sample: str = ""


@dataclass(frozen=True, slots=True)
class Rule:
    """When an entry is down and what each tenant may keep (``fleet:`` in the config)."""

    sessions: int = 3
    window_s: float = 600.0
    tenant_max_tools: int = 256
    recall_s: float = 1800.0
    tenant_max_agents: int = 256

    @property
    def sessions_kept(self) -> int:
        """Sessions remembered per entry: enough to count past the threshold, bounded."""
        return max(2 * self.sessions, 16)


@dataclass(frozen=True, slots=True)
class ToolHealth:
    """One entry: a tool's failures of one shape in one tenant."""

    tenant: str
    tool: str
    endpoint: str
    shape: str
    sessions: int  # distinct sessions within the window
    calls: int  # failing calls noted since first seen
    first: float  # epoch seconds
    last: float
    sample: str
    down_since: float = 0.0  # 0: not down

    @property
    def down(self) -> bool:
        return self.down_since > 0


@dataclass(frozen=True, slots=True)
class Change:
    """An entry that went down, or came back (``reason``: a success, or silence)."""

    kind: Literal["down", "recovered"]
    reason: Reason
    health: ToolHealth


@dataclass(frozen=True, slots=True)
class Report:
    """What one observation answers: the watched tools' entries that are down, the changes it
    made, the agent's stopped loops within the recall window, and entries evicted for room."""

    down: tuple[ToolHealth, ...] = ()
    changes: tuple[Change, ...] = ()
    stopped: tuple[StoppedLoop, ...] = ()
    evicted: int = 0


NOTHING = Report()


class FleetStore(Protocol):
    """Every method degrades like the state store: an unavailable backend answers
    ``NOTHING`` / ``[]``, and a write is best effort."""

    evictions: int

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
        """Note ``outcomes`` (in order: a failure adds the session to its entry, a success
        forgets the tool's entries), expire silent entries, and answer the entries of the
        outcomes' tools and of ``watch`` (tool, endpoint) that are down, and ``agent``'s stopped
        loops ("": not asked). One round trip."""
        ...

    async def health(self, tenant: str | None, now: float, rule: Rule) -> tuple[list[ToolHealth], list[Change]]:
        """Every entry of ``tenant`` (None: of every tenant) that is down now, and the ones
        found silent (expired) on the way."""
        ...

    def stop(self, tenant: str, agent: str, loop: StoppedLoop, rule: Rule) -> None:
        """Remember a loop ``agent``'s run was stopped for; fire and forget."""
        ...


def entry_id(tool: str, endpoint: str, shape: str) -> str:
    return f"{tool}\0{endpoint}\0{shape}"


def tool_key(tool: str, endpoint: str) -> str:
    """What a success clears: every entry id starting with it."""
    return f"{tool}\0{endpoint}\0"
