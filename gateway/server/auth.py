"""Who the client is: key check, the identity the rest of the gateway sees, trusted headers.

The gateway holds the upstream key, so without client keys anyone who can reach its port spends
it. With ``auth.keys`` set, a request must carry one of them (``Authorization: Bearer <key>`` or
``x-api-key: <key>``); the client's credential is then removed before anything else sees the
request, so it is never forwarded (the configured ``upstream.api_key`` is). Keys are compared
as SHA-256 digests in constant time, so neither the comparison's timing nor the config reveals
a key.

Every request, authenticated or not, leaves here with ``x-loopguard-client`` set to the SHA-256
of the credential it carried (any client-sent value is dropped first): state is namespaced and
policy overrides are matched by it. ``x-loopguard-agent`` is kept only for clients allowed to
select a policy override with it (``auth.agent_header_keys``; unset: every client).
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import unquote_to_bytes

from gateway.config import AuthConfig
from gateway.protocols.registry import CREDENTIALS, SECRET_HEADERS, SECRET_QUERY
from gateway.server.refusal import Refusal, protocol_at

CLIENT_HEADER = b"x-loopguard-client"
AGENT_HEADER = b"x-loopguard-agent"
# Every header a protocol carries a key in (``UpstreamSpec.credentials``), Authorization first.
_CREDENTIALS = frozenset(name.encode("latin-1") for name in SECRET_HEADERS)
_OTHERS = tuple(name.encode("latin-1") for name in CREDENTIALS if name != "authorization")
_QUERY_KEYS = tuple(name.encode("latin-1") + b"=" for name in sorted(SECRET_QUERY))
_OPERATOR_PATHS = frozenset({"/metrics", "/readyz"})


def digests(keys: tuple[str, ...]) -> tuple[bytes, ...]:
    """SHA-256 digests of configured keys (``sha256:<hex>`` entries are digests already)."""
    return tuple(bytes.fromhex(k[7:]) if k.startswith("sha256:") else hashlib.sha256(k.encode()).digest()
                 for k in keys)


def credential(headers: list[tuple[bytes, bytes]], query: bytes = b"") -> bytes | None:
    """The client's key: a bearer token, else another protocol's key header (``x-api-key``,
    Azure's ``api-key``, ...), else a key in the query (Google's ``?key=``); for a non-bearer
    Authorization the whole value (it still tells tenants apart). ``b""`` for an empty bearer
    token."""
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        name = name.lower()
        if name in _CREDENTIALS and name not in found:
            found[name] = value
    auth = found.get(b"authorization")
    if auth is not None:
        scheme, _, token = auth.partition(b" ")
        if scheme.lower() == b"bearer":
            return token.strip()
    for name in _OTHERS:
        if found.get(name):
            return found[name]
    return query_key(query) or auth


def query_key(query: bytes) -> bytes | None:
    for part in query.split(b"&") if query and _QUERY_KEYS else ():
        if part.startswith(_QUERY_KEYS):
            return unquote_to_bytes(part.partition(b"=")[2]) or None
    return None


def without_query_keys(query: bytes) -> bytes:
    return b"&".join(p for p in query.split(b"&") if not p.startswith(_QUERY_KEYS))


def allowed(digest: bytes | None, keys: tuple[bytes, ...]) -> bool:
    """Constant time in the key tried: every configured digest is compared, no early exit."""
    if digest is None:
        return False
    hit = False
    for key in keys:
        hit |= hmac.compare_digest(digest, key)
    return hit


class ClientAuth:
    """A request gate: the key check, and the headers the rest of the gateway sees."""

    def __init__(self, config: AuthConfig) -> None:
        self.keys = digests(config.keys)
        self.operator_keys = self.keys if config.metrics_keys is None else digests(config.metrics_keys)
        self.agent_keys = None if config.agent_header_keys is None else digests(config.agent_header_keys)

    def __call__(self, scope: dict) -> dict | Refusal:
        query = scope.get("query_string", b"")
        token = credential(scope["headers"], query)
        if token == b"":
            return _unauthorized(scope, "The Authorization header has an empty bearer token.")
        digest = hashlib.sha256(token).digest() if token is not None else None
        required = self.operator_keys if scope["path"] in _OPERATOR_PATHS else self.keys
        if scope["path"] != "/healthz" and required and not allowed(digest, required):
            what = "No API key was provided" if token is None else "The API key is not valid for this gateway"
            return _unauthorized(scope, f"{what} (Authorization: Bearer <key> or x-api-key).")
        checked = {**scope, "headers": self._headers(scope["headers"], digest)}
        if self.keys and query and _QUERY_KEYS:  # the gateway's key is no upstream's
            checked["query_string"] = without_query_keys(query)
        return checked

    def _headers(self, headers: list[tuple[bytes, bytes]], digest: bytes | None) -> list[tuple[bytes, bytes]]:
        drop = {CLIENT_HEADER}
        if self.keys:
            drop |= _CREDENTIALS  # authenticated: the upstream gets the server's key, never this one
        if self.agent_keys is not None and not allowed(digest, self.agent_keys):
            drop.add(AGENT_HEADER)
        out = [(k, v) for k, v in headers if k.lower() not in drop]
        if digest is not None:
            out.append((CLIENT_HEADER, digest.hex().encode()))
        return out


def _unauthorized(scope: dict, message: str) -> Refusal:
    kind = protocol_at(scope["path"]).declared.auth_error_type
    return Refusal(401, message, kind, "invalid_api_key", ((b"www-authenticate", b'Bearer realm="loopguard"'),))
