"""Client and operator keys: how a request presents one, how configured keys are kept (SHA-256
digests) and compared (constant time). The client-key gate and the operator console both use
these, so a key is read and checked the same way everywhere."""

from __future__ import annotations

import hashlib
import hmac

from gateway.config import TenantKey

CREDENTIALS = frozenset({b"authorization", b"x-api-key", b"api-key"})


def digests(keys: tuple[str | TenantKey, ...]) -> tuple[bytes, ...]:
    """SHA-256 digests of configured keys (``sha256:<hex>`` entries are digests already)."""
    return tuple(key_digest(k.key if isinstance(k, TenantKey) else k) for k in keys)


def key_digest(key: str) -> bytes:
    return bytes.fromhex(key[7:]) if key.startswith("sha256:") else hashlib.sha256(key.encode()).digest()


def credential(headers: list[tuple[bytes, bytes]]) -> bytes | None:
    """The client's key: a bearer token, else ``x-api-key``, else ``api-key`` (Azure); for a
    non-bearer Authorization the whole value (it still tells tenants apart). ``b""`` for an
    empty bearer token."""
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
    return found.get(b"x-api-key") or found.get(b"api-key") or auth


def allowed(digest: bytes | None, keys: tuple[bytes, ...]) -> bool:
    """Constant time in the key tried: every configured digest is compared, no early exit."""
    if digest is None:
        return False
    hit = False
    for key in keys:
        hit |= hmac.compare_digest(digest, key)
    return hit
