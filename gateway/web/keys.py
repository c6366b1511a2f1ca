"""Client and operator keys: how a request presents one, how configured keys are kept (SHA-256
digests) and compared (constant time). The client-key gate and the operator console both use
these, so a key is read and checked the same way everywhere."""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import unquote_to_bytes

from gateway.config import TenantKey
from gateway.protocols import registry

# Every header a protocol carries a key in (``UpstreamSpec.credentials``); Authorization first,
# then the others in the order the adapters declare them.
CREDENTIALS = frozenset(name.encode("latin-1") for name in registry.SECRET_HEADERS)
_OTHERS = tuple(name.encode("latin-1") for name in registry.CREDENTIALS if name != "authorization")
_QUERY_KEYS = tuple(name.encode("latin-1") + b"=" for name in sorted(registry.SECRET_QUERY))


def digests(keys: tuple[str | TenantKey, ...]) -> tuple[bytes, ...]:
    """SHA-256 digests of configured keys (``sha256:<hex>`` entries are digests already)."""
    return tuple(key_digest(k.key if isinstance(k, TenantKey) else k) for k in keys)


def key_digest(key: str) -> bytes:
    return bytes.fromhex(key[7:]) if key.startswith("sha256:") else hashlib.sha256(key.encode()).digest()


def credential(headers: list[tuple[bytes, bytes]], query: bytes = b"") -> bytes | None:
    """The client's key: a bearer token, else another protocol's key header (``x-api-key``,
    Azure's ``api-key``, ...), else a key in the query (Google's ``?key=``); for a non-bearer
    Authorization the whole value (it still tells tenants apart). ``b""`` for an empty bearer
    token."""
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        name = name.lower()
        if name in CREDENTIALS and name not in found:
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
    """A key the client put in the query string (``UpstreamSpec.credential_query``)."""
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
