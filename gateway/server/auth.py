"""Who the client is: key check, the identity the rest of the gateway sees, trusted headers.

The gateway holds the upstream key, so without client keys anyone who can reach its port spends
it. With ``auth.keys`` set, a request must carry one of them (``Authorization: Bearer <key>`` or
``x-api-key: <key>``); the client's credential is then removed before anything else sees the
request, so it is never forwarded (the configured ``upstream.api_key`` is). Keys are compared
as SHA-256 digests in constant time, so neither the comparison's timing nor the config reveals
a key.

Every request, authenticated or not, leaves here with ``x-loopguard-client`` set to the SHA-256
of the credential it carried (any client-sent value is dropped first): state is namespaced and
policy overrides are matched by it. A key configured with a tenant also gets
``x-loopguard-tenant``: the tenant's keys share one namespace. ``x-loopguard-agent`` is kept only for clients allowed to
select a policy override with it (``auth.agent_header_keys``; unset: every client). ``/metrics``
and ``/readyz`` take their operator key from a header only, never from the query string.
"""

from __future__ import annotations

import hashlib
from typing import Any

from gateway.config import AuthConfig, TenantKey
from gateway.server.refusal import Refusal, protocol_at
from gateway.web.keys import CREDENTIALS, PLACES, allowed, digests, key_digest

CLIENT_HEADER = b"x-loopguard-client"
TENANT_HEADER = b"x-loopguard-tenant"  # the tenant the key belongs to (``auth.keys`` entries)
AGENT_HEADER = b"x-loopguard-agent"
_OPERATOR_PATHS = frozenset({"/metrics", "/readyz"})


def tenants(keys: tuple[str | TenantKey, ...]) -> dict[bytes, str]:
    """Key digest -> tenant, for the entries that name one."""
    return {key_digest(k.key): k.tenant for k in keys if isinstance(k, TenantKey)}


class ClientAuth:
    """A request gate: the key check, and the headers the rest of the gateway sees."""

    def __init__(self, config: AuthConfig) -> None:
        self.keys = digests(config.keys)
        self.tenants = tenants(config.keys)
        self.operator_keys = self.keys if config.metrics_keys is None else digests(config.metrics_keys)
        self.agent_keys = None if config.agent_header_keys is None else digests(config.agent_header_keys)

    def __call__(self, scope: dict[str, Any]) -> dict[str, Any] | Refusal:
        if _console(scope["path"]):
            return scope  # never forwarded anywhere; the console checks operator keys itself
        query = scope.get("query_string", b"")
        operator = scope["path"] in _OPERATOR_PATHS
        # An operator's key only in a header: a query string lands in proxies' and scrapers' logs.
        token = PLACES.credential(scope["headers"], b"" if operator else query)
        if token == b"":
            return _unauthorized(scope, "The Authorization header has an empty bearer token.")
        digest = hashlib.sha256(token).digest() if token is not None else None
        required = self.operator_keys if operator else self.keys
        if scope["path"] != "/healthz" and required and not allowed(digest, required):
            what = "No API key was provided" if token is None else "The API key is not valid for this gateway"
            return _unauthorized(scope, f"{what} (Authorization: Bearer <key> or x-api-key).")
        checked = {**scope, "headers": self._headers(scope["headers"], digest)}
        if self.keys and query:  # a key in the query is the gateway's, no upstream's
            checked["query_string"] = PLACES.without_query_keys(query)
        return checked

    def _headers(self, headers: list[tuple[bytes, bytes]], digest: bytes | None) -> list[tuple[bytes, bytes]]:
        drop = {CLIENT_HEADER, TENANT_HEADER}
        if self.keys:
            drop |= CREDENTIALS  # authenticated: the upstream gets the server's key, never this one
        if self.agent_keys is not None and not allowed(digest, self.agent_keys):
            drop.add(AGENT_HEADER)
        out = [(k, v) for k, v in headers if k.lower() not in drop]
        if digest is not None:
            out.append((CLIENT_HEADER, digest.hex().encode()))
            tenant = self.tenants.get(digest)
            if tenant is not None:
                out.append((TENANT_HEADER, tenant.encode("utf-8", "replace")))
        return out


def _console(path: str) -> bool:
    """The operator console checks operator keys itself (a browser's login cookie, basic auth)."""
    return path == "/ui" or path.startswith("/ui/")


def _unauthorized(scope: dict[str, Any], message: str) -> Refusal:
    kind = protocol_at(scope["path"]).declared.auth_error_type
    return Refusal(401, message, kind, "invalid_api_key", ((b"www-authenticate", b'Bearer realm="loopguard"'),))
