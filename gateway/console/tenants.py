"""Whose run an event is, as the console shows and filters it.

Every session id starts with its client's namespace (``gateway.state.session.client_namespace``):
``t:<hash>:`` for a key configured with a tenant (all of that tenant's keys share it), ``c:<hash>:``
for a key without one. The console reads the namespace back from the session id, so the events
log needs no field of its own, and names a tenant by its ``auth.keys`` name, not its hash.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gateway.config import AuthConfig, TenantKey
from gateway.state.session import CLIENT_HEADER, TENANT_HEADER, client_namespace
from gateway.web.keys import key_digest

_NAMESPACE = re.compile(r"[tc]:[0-9a-f]{24}:")


@dataclass(frozen=True, slots=True)
class Tenancy:
    names: dict[str, str]  # tenant namespace -> the tenant's name
    spaces: dict[bytes, str]  # every client key's digest -> its namespace

    @classmethod
    def of(cls, auth: AuthConfig) -> Tenancy:
        names: dict[str, str] = {}
        spaces: dict[bytes, str] = {}
        for entry in auth.keys:
            key = entry.key if isinstance(entry, TenantKey) else entry
            digest = key_digest(key)
            if isinstance(entry, TenantKey):
                space = tenant_namespace(entry.tenant)
                names[space] = entry.tenant
            else:
                space = client_namespace({CLIENT_HEADER: digest.hex()})
            spaces[digest] = space
        return cls(names, spaces)

    @property
    def configured(self) -> bool:
        """Some key names a tenant: the gateway serves several parties."""
        return bool(self.names)

    def name(self, session: str) -> str | None:
        """The tenant's name of a session, None for a key without a tenant (or no key)."""
        return self.names.get(namespace(session))


def tenant_namespace(tenant: str) -> str:
    """As the request path computes it: the client-key gate sends the tenant's name UTF-8 encoded
    in a header, which the request reads back as Latin-1 before hashing it."""
    return client_namespace({TENANT_HEADER: tenant.encode("utf-8").decode("latin-1")})


def namespace(session: str) -> str:
    """The client namespace a session id starts with; "" when it names none (no client key)."""
    found = _NAMESPACE.match(session)
    return found.group(0) if found else ""
