"""Key names on Redis, laid out so every script a request runs stays in one hash slot.

Redis Cluster shards keys by slot and refuses a script whose keys span slots; a key's slot is
computed from its hash tag alone when it has one (the text between the first ``{`` and the next
``}``). So:

- a session's keys carry the session as their tag: ``{prefix}{kind}:{<session>}``, so the script
  reading a session's vetoes, mark, compaction marker, warned calls and verdict is one slot;
- a tenant's budget indexes carry the tenant: ``{prefix}{kind}:{<tenant>}`` (``-`` for the
  clients without a credential, whose namespace is empty: an empty tag would not be one), so the
  script keeping a tenant's records within its byte cap is one slot;
- chain records and ownership claims (``{prefix}r:...``) are read and written one key at a time
  and carry no tag: they spread over the whole cluster.

Sessions spread over the cluster as they do over a single node's memory; the same names serve a
single node and a Sentinel set, where tags mean nothing.
"""

from __future__ import annotations

from gateway.state.shares import tenant_of

NO_TENANT = "-"


def session_key(prefix: str, kind: str, session: str) -> str:
    return f"{prefix}{kind}:{{{session}}}"


def parse_session_key(prefix: str, key: str) -> tuple[str, str]:
    """(kind, session) of a key ``session_key`` named (kinds are one letter)."""
    return key[len(prefix) : len(prefix) + 1], key[len(prefix) + 3 : -1]


def tenant_key(prefix: str, kind: str, key: str) -> str:
    """The ``kind`` index of the tenant that ``key`` (a session or a record key) belongs to."""
    return f"{prefix}{kind}:{{{tenant_of(key) or NO_TENANT}}}"
