"""Who may open the console: an operator, holding one of ``auth.metrics_keys`` (unset: the client
keys; none configured: open, as ``/metrics`` is).

A key is accepted as ``Authorization: Bearer``, ``x-api-key`` or HTTP basic (the password, or
the user name when the password is empty: ``curl -u :KEY``). A browser signs in once with the
login form, which sets an HttpOnly, SameSite=Strict cookie. The cookie holds no key: it is the
time it was issued and an HMAC of that time keyed by the key's SHA-256, so any replica with the
same configuration accepts it, it expires after ``SESSION_S``, and removing the key from the
configuration ends it.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import time

from starlette.requests import Request

from gateway.config import AuthConfig
from gateway.web.keys import PLACES, allowed, digests

COOKIE = "loopguard_console"
SESSION_S = 12 * 3600


class OperatorAccess:
    def __init__(self, config: AuthConfig) -> None:
        self.keys = digests(config.keys if config.metrics_keys is None else config.metrics_keys)

    @property
    def open(self) -> bool:
        return not self.keys

    def allows(self, request: Request) -> bool:
        if self.open:
            return True
        key = _basic(request.headers.get("authorization")) or PLACES.credential(request.scope["headers"])
        if key and allowed(hashlib.sha256(key).digest(), self.keys):
            return True
        return self.valid_cookie(request.cookies.get(COOKIE, ""))

    def sign_in(self, key: str) -> str | None:
        """The cookie value for a correct key, else None."""
        digest = hashlib.sha256(key.encode()).digest()
        if not key or not allowed(digest, self.keys):
            return None
        issued = str(int(time.time()))
        return f"{issued}.{_mac(digest, issued)}"

    def valid_cookie(self, value: str) -> bool:
        issued, _, mac = value.partition(".")
        if not issued.isdigit() or not mac or time.time() - int(issued) > SESSION_S:
            return False
        hit = False
        for key in self.keys:  # every key compared: no early exit
            hit |= hmac.compare_digest(_mac(key, issued), mac)
        return hit


def _mac(digest: bytes, issued: str) -> str:
    return hmac.new(digest, f"loopguard-console:{issued}".encode(), hashlib.sha256).hexdigest()


def _basic(header: str | None) -> bytes | None:
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        user, _, password = base64.b64decode(header[6:].strip(), validate=True).partition(b":")
    except (binascii.Error, ValueError):
        return None
    return password or user or None
