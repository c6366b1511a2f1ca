"""Each tenant's budget on Redis: its sessions and its records (chain records and ownership
claims), bounded per tenant by the scripts that write them, so one tenant's volume trims only
its own oldest state.

Redis forgets idle keys by their TTL, but within a TTL a tenant sending many requests could
still fill Redis until its ``maxmemory`` policy evicts any tenant's keys. So every write of a
record or of a session's mark also notes the key in its tenant's index (the tenant is read from
the key: ``gateway.state.shares.tenant_of``), and trims that tenant's oldest beyond its cap:

- ``{prefix}rb:{tenant}``: sorted set, the tenant's record keys by when they were written (ms);
  ``{prefix}rs:{tenant}``: hash, each record's weight in bytes (key, value and a fixed overhead,
  as the memory store counts it) and, under the empty field, their total; the oldest records are deleted while the total exceeds
  ``state.tenant_max_chain_bytes``;
- ``{prefix}s:{tenant}``: sorted set, the tenant's sessions by when last used (ms); the least
  recently used sessions' keys (vetoes, mark, compaction marker, warned calls, verdict) are
  deleted while the tenant has more than ``state.tenant_max_sessions``.

Entries older than the TTL leave the indexes as they are met (their keys expired by themselves),
and the indexes carry the TTL too, so an idle tenant leaves nothing behind. Record and session
key names are unchanged, so replicas of earlier versions read the same keys; the tenant is not
made a hash tag (``{tenant}``) for that reason, which keeps these scripts to one Redis node or a
Sentinel set (the store does not support Redis Cluster).
"""

from __future__ import annotations

from gateway.state.mirror import TRACKED
from gateway.state.shares import tenant_of

RECORD_INDEX, RECORD_SIZES, SESSION_INDEX = "rb", "rs", "s"

# KEYS[1] the record, KEYS[2] its tenant's index, KEYS[3] its tenant's sizes;
# ARGV[1] the value, ARGV[2] the TTL (ms), ARGV[3] now (ms), ARGV[4] the tenant's byte cap,
# ARGV[5] the record's weight (``shares.record_weight``: key, value and overhead, as in memory).
SAVE_RECORD = """
local ttl, now, cap = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl)
local total = tonumber(redis.call('HGET', KEYS[3], '') or '0')
for _, gone in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now - ttl, 'LIMIT', 0, 64)) do
  total = total - tonumber(redis.call('HGET', KEYS[3], gone) or '0')
  redis.call('HDEL', KEYS[3], gone)
  redis.call('ZREM', KEYS[2], gone)
end
total = total - tonumber(redis.call('HGET', KEYS[3], KEYS[1]) or '0') + tonumber(ARGV[5])
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('HSET', KEYS[3], KEYS[1], ARGV[5])
local evicted = 0
while total > cap do
  local oldest = redis.call('ZPOPMIN', KEYS[2])
  if #oldest == 0 then total = 0 break end
  total = total - tonumber(redis.call('HGET', KEYS[3], oldest[1]) or '0')
  redis.call('HDEL', KEYS[3], oldest[1])
  redis.call('DEL', oldest[1])
  evicted = evicted + 1
end
redis.call('HSET', KEYS[3], '', total)
redis.call('PEXPIRE', KEYS[2], ttl)
redis.call('PEXPIRE', KEYS[3], ttl)
return evicted
"""

# A Lua function the session scripts share: note ``session`` as just used in ``index`` and
# trim the tenant's least recently used sessions beyond ``cap``; the count trimmed.
TOUCH_SESSION = (
    """
local function touch(index, session, now, ttl, cap, prefix)
  redis.call('ZADD', index, now, session)
  local stale = redis.call('ZRANGEBYSCORE', index, '-inf', now - ttl, 'LIMIT', 0, 64)
  if #stale > 0 then redis.call('ZREM', index, unpack(stale)) end
  local evicted = 0
  while redis.call('ZCARD', index) > cap do
    local oldest = redis.call('ZPOPMIN', index)
    for _, kind in ipairs({KINDS}) do
      redis.call('DEL', prefix .. kind .. ':' .. oldest[1])
    end
    evicted = evicted + 1
  end
  redis.call('PEXPIRE', index, ttl)
  return evicted
end
"""
).replace("KINDS", ", ".join(f"'{kind}'" for kind in TRACKED))


def index_key(prefix: str, kind: str, key: str) -> str:
    """The index of ``kind`` of the tenant ``key`` belongs to."""
    return f"{prefix}{kind}:{tenant_of(key)}"
