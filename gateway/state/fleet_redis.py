"""The fleet's memory on Redis (``state.backend: redis``), shared by every replica.

A tenant's keys carry the tenant as their hash tag (``gateway.state.redis_keys``), so each
script below runs in one slot of a Redis Cluster as on one node:

- ``{prefix}fe:{<tenant>}``: hash, entry id (tool, endpoint, shape) -> the entry as JSON (its
  sessions with when each last failed, first and last seen, calls, one failure's text, since
  when it is down);
- ``{prefix}fi:{<tenant>}``: sorted set, entry ids by their last failure (ms): the silent ones
  expire from its front, and the tenant's least recently failing are evicted beyond its cap;
- ``{prefix}fl:{<tenant>}``: sorted set, every entry id at score 0, so a tool's entries are one
  lexicographic range (a success forgets them all);
- ``{prefix}fa:{<tenant>}`` / ``{prefix}fq:{<tenant>}``: hash and sorted set, each agent's
  stopped loops and when the last was noted (the tenant's least recent agents evicted beyond
  its cap).

Every key carries a TTL of twice the longer window, so an idle tenant leaves nothing. The
operator's view of every tenant reads ``{prefix}ft`` (no tag: one key), the tenants that had a
tool down, written when one goes down.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from gateway.state.fleet import (
    NOTHING,
    STOPS_PER_AGENT,
    Change,
    Outcome,
    Reason,
    Report,
    Rule,
    ToolHealth,
)
from gateway.state.redis_keys import NO_TENANT
from gateway.trace.fleet import StoppedLoop
from gateway.wire import codec

Runner = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]
ENTRIES, BY_LAST, BY_NAME, STOPS, AGENTS, TENANTS = "fe", "fi", "fl", "fa", "fq", "ft"
TENANTS_KEPT_S = 24 * 3600.0  # the operator's index forgets a tenant a day after a tool of its went down

# Helpers shared by both scripts: an entry read from its JSON, its live sessions counted, and
# an entry forgotten (a change "recovered" returned when it was down).
_COMMON = """
local function live(e, now, window)
  local n = 0
  for _, at in pairs(e.s) do if at > now - window then n = n + 1 end end
  return n
end
local changes = {}
local function forget(id, reason)
  local raw = redis.call('HGET', KEYS[1], id)
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
  redis.call('ZREM', KEYS[3], id)
  if raw then
    local e = cjson.decode(raw)
    if e.d > 0 then changes[#changes + 1] = {'recovered', reason, raw} end
  end
end
local function expire(now, window)
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - window, 'LIMIT', 0, 64)) do
    forget(id, 'silence')
  end
end
"""

# KEYS: entries, by last, by name, stops, agents. ARGV[1] now (ms), [2] window (ms), [3] sessions
# needed, [4] the tenant's entry cap, [5] sessions kept per entry, [6] the session, [7] the agent
# ("" not asked), [8] recall (ms), [9] TTL (ms), [10] outcomes k; then 5 values per outcome (ok,
# tool, endpoint, shape, sample), then the watched tool keys. Returns {down entries, changes,
# the agent's stops, evicted}.
OBSERVE = (
    _COMMON
    + """
local now, window, need, cap = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local kept, session, agent = tonumber(ARGV[5]), ARGV[6], ARGV[7]
local recall, ttl, k = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
expire(now, window)
local keys, at = {}, 11
for n = 1, k do
  local ok, tool, ep, shape, sample = ARGV[at], ARGV[at + 1], ARGV[at + 2], ARGV[at + 3], ARGV[at + 4]
  at = at + 5
  local prefix = tool .. '\\0' .. ep .. '\\0'
  keys[#keys + 1] = prefix
  if ok == '1' then
    for _, id in ipairs(redis.call('ZRANGEBYLEX', KEYS[3], '[' .. prefix, '[' .. prefix .. '\\255')) do
      forget(id, 'success')
    end
  else
    local id = prefix .. shape
    local raw = redis.call('HGET', KEYS[1], id)
    local e
    if raw then e = cjson.decode(raw) else e = {t = tool, p = ep, h = shape, f = now, c = 0, x = sample, d = 0, s = {}} end
    local sessions, count = {}, 0
    for sid, last in pairs(e.s) do
      if last > now - window and sid ~= session then sessions[sid] = last; count = count + 1 end
    end
    sessions[session] = now
    count = count + 1
    while count > kept do
      local oldest, when = nil, nil
      for sid, last in pairs(sessions) do if when == nil or last < when then oldest, when = sid, last end end
      sessions[oldest] = nil
      count = count - 1
    end
    e.s, e.l, e.c = sessions, now, e.c + 1
    if e.d == 0 and count >= need then
      e.d = now
      changes[#changes + 1] = {'down', 'sessions', cjson.encode(e)}
    end
    redis.call('HSET', KEYS[1], id, cjson.encode(e))
    redis.call('ZADD', KEYS[2], now, id)
    redis.call('ZADD', KEYS[3], 0, id)
  end
end
for i = at, #ARGV do keys[#keys + 1] = ARGV[i] end
local evicted = 0
while redis.call('ZCARD', KEYS[2]) > cap do
  local id = redis.call('ZPOPMIN', KEYS[2])[1]
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[3], id)
  evicted = evicted + 1
end
local down, seen = {}, {}
for _, prefix in ipairs(keys) do
  if not seen[prefix] then
    seen[prefix] = true
    for _, id in ipairs(redis.call('ZRANGEBYLEX', KEYS[3], '[' .. prefix, '[' .. prefix .. '\\255')) do
      local raw = redis.call('HGET', KEYS[1], id)
      if raw and cjson.decode(raw).d > 0 then down[#down + 1] = raw end
    end
  end
end
local stops = false
if agent ~= '' then stops = redis.call('HGET', KEYS[4], agent) end
if k > 0 then
  for i = 1, 3 do redis.call('PEXPIRE', KEYS[i], ttl) end
end
return {down, changes, stops, evicted}
"""
)

# KEYS: entries, by last, by name. ARGV[1] now (ms), [2] window (ms). The tenant's down entries
# (silent ones expired first) and the changes.
HEALTH = (
    _COMMON
    + """
expire(tonumber(ARGV[1]), tonumber(ARGV[2]))
local down = {}
for _, raw in ipairs(redis.call('HVALS', KEYS[1])) do
  if cjson.decode(raw).d > 0 then down[#down + 1] = raw end
end
return {down, changes}
"""
)

# KEYS: stops, agents. ARGV[1] now (ms), [2] recall (ms), [3] the tenant's agent cap, [4] the
# agent, [5] the stop as JSON, [6] stops kept per agent. The agents evicted.
STOP = """
local now, recall, cap, agent, kept = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], tonumber(ARGV[6])
local new = cjson.decode(ARGV[5])
local raw = redis.call('HGET', KEYS[1], agent)
local stops = {}
if raw then
  for _, s in ipairs(cjson.decode(raw)) do
    if s.at > now - recall and s.c ~= new.c then stops[#stops + 1] = s end
  end
end
stops[#stops + 1] = new
while #stops > kept do table.remove(stops, 1) end
redis.call('HSET', KEYS[1], agent, cjson.encode(stops))
redis.call('ZADD', KEYS[2], now, agent)
local gone = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - recall, 'LIMIT', 0, 64)
for _, old in ipairs(gone) do redis.call('HDEL', KEYS[1], old); redis.call('ZREM', KEYS[2], old) end
local evicted = 0
while redis.call('ZCARD', KEYS[2]) > cap do
  redis.call('HDEL', KEYS[1], redis.call('ZPOPMIN', KEYS[2])[1])
  evicted = evicted + 1
end
redis.call('PEXPIRE', KEYS[1], recall)
redis.call('PEXPIRE', KEYS[2], recall)
return evicted
"""


class RedisFleet:
    """Runs on the state store's client, under its timeout and degradation (``RedisStore.run``:
    a Redis that cannot answer leaves the fleet knowing nothing, and traffic goes on)."""

    def __init__(self, client: Any, prefix: str, run: Runner, background: Callable[..., bool]) -> None:
        self.prefix = prefix
        self.evictions = 0
        self._client = client
        self._run = run
        self._background = background
        self._observe = client.register_script(OBSERVE)
        self._health = client.register_script(HEALTH)
        self._stop = client.register_script(STOP)

    def key(self, kind: str, tenant: str) -> str:
        return f"{self.prefix}{kind}:{{{tenant or NO_TENANT}}}"

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
        args: list[Any] = [
            _ms(now),
            _ms(rule.window_s),
            rule.sessions,
            rule.tenant_max_tools,
            rule.sessions_kept,
            session,
            agent,
            _ms(rule.recall_s),
            _ms(2 * max(rule.window_s, rule.recall_s)),
            len(outcomes),
        ]
        for o in outcomes:
            args += ["1" if o.ok else "0", o.tool, o.endpoint, o.shape, o.sample]
        args += [f"{tool}\0{endpoint}\0" for tool, endpoint in watch]
        keys = [self.key(kind, tenant) for kind in (ENTRIES, BY_LAST, BY_NAME, STOPS, AGENTS)]
        found = await self._run("fleet_observe", lambda: self._observe(keys=keys, args=args))
        if not isinstance(found, list):
            return NOTHING
        raw_down, raw_changes, raw_stops, evicted = found
        self.evictions += int(evicted)
        changes = tuple(_change(tenant, c, now, rule) for c in raw_changes)
        if any(c.kind == "down" for c in changes):  # rare: a tool just went down
            await self._run("fleet_tenant", partial(self._note_tenant, tenant, now))
        down = tuple(_health(tenant, raw, now, rule) for raw in raw_down)
        stopped = _stops(raw_stops, now, rule) if raw_stops else ()
        if not (down or changes or stopped):
            return NOTHING
        return Report(down, changes, stopped, int(evicted))

    async def health(self, tenant: str | None, now: float, rule: Rule) -> tuple[list[ToolHealth], list[Change]]:
        tenants = [tenant] if tenant is not None else await self._tenants(now, rule)
        found: list[ToolHealth] = []
        changes: list[Change] = []
        args = [_ms(now), _ms(rule.window_s)]
        for one in tenants:
            keys = [self.key(kind, one) for kind in (ENTRIES, BY_LAST, BY_NAME)]
            answer = await self._run("fleet_health", partial(self._health, keys=keys, args=args))
            if isinstance(answer, list):
                found += [_health(one, raw, now, rule) for raw in answer[0]]
                changes += [_change(one, c, now, rule) for c in answer[1]]
        return found, changes

    def stop(self, tenant: str, agent: str, loop: StoppedLoop, rule: Rule) -> None:
        stop = {"d": loop.detector, "t": loop.tool, "a": loop.args_hash, "f": loop.failure_hash, "c": loop.call_id}
        raw = codec.dumps({**stop, "at": _ms(loop.at)})
        keys = [self.key(STOPS, tenant), self.key(AGENTS, tenant)]
        args = [_ms(loop.at), _ms(rule.recall_s), rule.tenant_max_agents, agent, raw, STOPS_PER_AGENT]

        async def write() -> None:
            self.evictions += int(await self._stop(keys=keys, args=args))

        self._background("fleet_stop", write)

    async def _tenants(self, now: float, rule: Rule) -> list[str]:
        """The tenants that had a tool down within the window (the operator's view)."""
        since = _ms(now - rule.window_s)
        found = await self._run(
            "fleet_tenants", lambda: self._client.zrangebyscore(f"{self.prefix}{TENANTS}", since, "+inf")
        )
        if not isinstance(found, list):
            return []
        return [raw.decode() if isinstance(raw, bytes) else str(raw) for raw in found]

    async def _note_tenant(self, tenant: str, now: float) -> None:
        name, ttl = f"{self.prefix}{TENANTS}", _ms(TENANTS_KEPT_S)
        pipe = self._client.pipeline(transaction=False)
        pipe.zadd(name, {tenant: _ms(now)})
        pipe.zremrangebyscore(name, "-inf", _ms(now) - ttl)
        pipe.pexpire(name, ttl)
        await pipe.execute()


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


def _health(tenant: str, raw: bytes | str, now: float, rule: Rule) -> ToolHealth:
    e = codec.loads(raw)
    sessions = e.get("s") or {}
    live = sum(1 for at in sessions.values() if at > _ms(now - rule.window_s)) if isinstance(sessions, dict) else 0
    return ToolHealth(
        tenant,
        str(e["t"]),
        str(e["p"]),
        str(e["h"]),
        live,
        int(e["c"]),
        e["f"] / 1000,
        e.get("l", e["f"]) / 1000,
        str(e["x"]),
        e["d"] / 1000,
    )


def _change(tenant: str, raw: list[Any], now: float, rule: Rule) -> Change:
    kind, reason, entry = (part.decode() if isinstance(part, bytes) else part for part in raw)
    return Change(
        "down" if kind == "down" else "recovered", _REASONS.get(reason, "silence"), _health(tenant, entry, now, rule)
    )


_REASONS: dict[str, Reason] = {"sessions": "sessions", "success": "success", "silence": "silence"}


def _stops(raw: bytes | str, now: float, rule: Rule) -> tuple[StoppedLoop, ...]:
    return tuple(
        StoppedLoop(str(s["d"]), str(s["t"]), str(s["a"]), str(s["f"]), str(s["c"]), float(s["at"]) / 1000)
        for s in codec.loads(raw)
        if isinstance(s, dict) and float(s["at"]) / 1000 > now - rule.recall_s
    )
