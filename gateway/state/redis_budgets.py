"""Each tenant's budget on Redis: its sessions and its records (chain records and ownership
claims), bounded per tenant, so one tenant's volume trims only its own oldest state.

Redis forgets idle keys by their TTL, but within a TTL a tenant sending many requests could
still fill Redis until its ``maxmemory`` policy evicts any tenant's keys. So every write of a
record or of a session's mark also notes the key in its tenant's index (the tenant is read from
the key: ``gateway.state.shares.tenant_of``), and the tenant's oldest beyond its cap are trimmed:

- ``{prefix}rb:{<tenant>}``: sorted set, the tenant's record keys by when they were written (ms);
  ``{prefix}rs:{<tenant>}``: hash, each record's weight in bytes (key, value and a fixed overhead,
  as the memory store counts it) and, under the empty field, their total; the oldest records are
  deleted while the total exceeds ``state.tenant_max_chain_bytes``;
- ``{prefix}s:{<tenant>}``: sorted set, the tenant's sessions by when last used (ms); the least
  recently used sessions' keys (vetoes, mark, compaction marker, warned calls, verdict) are
  deleted while the tenant has more than ``state.tenant_max_sessions``.

The scripts here touch only the tenant's index keys, which share the tenant's hash tag
(``gateway.state.redis_keys``), so they run on Redis Cluster as on one node: they return the
keys or sessions they trimmed, and the store deletes those (each in its own slot). A deletion
that fails leaves keys the TTL removes anyway. Entries older than the TTL leave the indexes as
they are met (their keys expired by themselves), and the indexes carry the TTL too, so an idle
tenant leaves nothing behind.
"""

from __future__ import annotations

RECORD_INDEX, RECORD_SIZES, SESSION_INDEX = "rb", "rs", "s"

# KEYS[1] the tenant's record index, KEYS[2] its sizes; ARGV[1] the record's key, ARGV[2] the
# TTL (ms), ARGV[3] now (ms), ARGV[4] the tenant's byte cap, ARGV[5] the record's weight
# (``shares.record_weight``: key, value and overhead, as in memory). The record keys trimmed.
NOTE_RECORD = """
local ttl, now, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local total = tonumber(redis.call('HGET', KEYS[2], '') or '0')
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - ttl, 'LIMIT', 0, 64)) do
  total = total - tonumber(redis.call('HGET', KEYS[2], gone) or '0')
  redis.call('HDEL', KEYS[2], gone)
  redis.call('ZREM', KEYS[1], gone)
end
total = total - tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0') + tonumber(ARGV[5])
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[5])
local evicted = {}
while total > cap do
  local oldest = redis.call('ZPOPMIN', KEYS[1])
  if #oldest == 0 then total = 0 break end
  total = total - tonumber(redis.call('HGET', KEYS[2], oldest[1]) or '0')
  redis.call('HDEL', KEYS[2], oldest[1])
  evicted[#evicted + 1] = oldest[1]
end
redis.call('HSET', KEYS[2], '', total)
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return evicted
"""

# The note of sessions just used in a tenant's session index, as a Lua function: the touch
# script runs it alone, and on one node (a single server, a Sentinel-watched primary, where
# keys of any slot meet) the session read runs it in the same script (``redis._READ_NOTED``).
# ``index`` a tenant's session index; ``now`` (ms), ``ttl`` (ms), ``cap`` the tenant's session
# cap; ``first``: where its sessions start in ARGV. The sessions trimmed (least recently used).
NOTE_SESSIONS = """
local function note_sessions(index, now, ttl, cap, first)
  for i = first, #ARGV do redis.call('ZADD', index, now, ARGV[i]) end
  local stale = redis.call('ZRANGEBYSCORE', index, '-inf', now - ttl, 'LIMIT', 0, 64)
  if #stale > 0 then redis.call('ZREM', index, unpack(stale)) end
  local evicted = {}
  while redis.call('ZCARD', index) > cap do
    evicted[#evicted + 1] = redis.call('ZPOPMIN', index)[1]
  end
  redis.call('PEXPIRE', index, ttl)
  return evicted
end
"""

# KEYS[1] a tenant's session index; ARGV[1] now (ms), ARGV[2] the TTL (ms), ARGV[3] the tenant's
# session cap, ARGV[4...] its sessions just used. The sessions trimmed (least recently used).
TOUCH_SESSIONS = (
    NOTE_SESSIONS
    + """
return note_sessions(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), 4)
"""
)
