"""Client and operator keys: where a request presents one (``PLACES``), how configured keys are
kept (SHA-256 digests) and compared (constant time). The client-key gate and the operator console
both use these, so a key is read and checked the same way everywhere."""

from __future__ import annotations

import hashlib
import hmac

from gateway.config import TenantKey
from gateway.protocols import registry

# Every header a protocol carries a key in (``UpstreamSpec.credentials`` and the server key's
# header): never forwarded once the gateway authenticates the client itself.
CREDENTIALS = frozenset(name.encode("latin-1") for name in registry.SECRET_HEADERS)
# Where a client presents its key, read by ``KeyPlaces.credential`` (``gateway.wire.credentials``).
PLACES = registry.KEY_PLACES


def digests(keys: tuple[str | TenantKey, ...]) -> tuple[bytes, ...]:
    """SHA-256 digests of configured keys (``sha256:<hex>`` entries are digests already)."""
    return tuple(key_digest(k.key if isinstance(k, TenantKey) else k) for k in keys)


def key_digest(key: str) -> bytes:
    return bytes.fromhex(key[7:]) if key.startswith("sha256:") else hashlib.sha256(key.encode()).digest()


def allowed(digest: bytes | None, keys: tuple[bytes, ...]) -> bool:
    """Constant time in the key tried: every configured digest is compared, no early exit."""
    if digest is None:
        return False
    hit = False
    for key in keys:
        hit |= hmac.compare_digest(digest, key)
    return hit
