"""Who may open the console, and what they see.

An operator (one of ``auth.metrics_keys``) sees every run. Without ``metrics_keys`` the client keys
are the operators' while no key names a tenant; once tenants are configured a client key is a
tenant's, so none of them opens the console (a tenant must not read another's runs): set
``metrics_keys``. ``metrics_keys: []`` or no keys at all: open, as ``/metrics`` is. With
``ui.tenant_view`` every client key opens it too, showing only its own namespace's runs (its
tenant's, or its own key's for a key without a tenant).

A key is accepted in a header only (``Authorization: Bearer``, ``x-api-key``, or HTTP basic: the
password, or the user name when the password is empty, ``curl -u :KEY``), never in the query
string, where it would land in logs and browser history. A browser signs in once with the login
form, which sets an HttpOnly, SameSite=Strict cookie. The cookie holds no key: it is the time it
was issued, a random reference and an HMAC of both keyed by the key's SHA-256, so any replica with
the same configuration accepts it, it expires after ``SESSION_S``, and removing the key from the
configuration ends it. Signing out revokes the reference in the state store (shared by replicas
on Redis) until the cookie would have expired: the old cookie no longer opens anything.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from starlette.requests import Request

from gateway.config import AuthConfig, UiConfig
from gateway.console.tenants import Tenancy
from gateway.state.base import StateStore
from gateway.web.keys import PLACES, allowed, digests

COOKIE = "loopguard_console"
SESSION_S = 12 * 3600


@dataclass(frozen=True, slots=True)
class Viewer:
    space: str | None  # None: an operator, every run; else the client namespace whose runs it sees
    tenant: str | None = None  # the tenant's name, for the page


OPERATOR = Viewer(None)


@dataclass(frozen=True, slots=True)
class Cookie:
    issued: str
    ref: str
    mac: str

    @classmethod
    def read(cls, value: str) -> Cookie | None:
        issued, ref, mac = (value.split(".") + ["", ""])[:3]
        if not issued.isdigit() or not ref.isalnum() or not mac or time.time() - int(issued) > SESSION_S:
            return None
        return cls(issued, ref, mac)

    def left_s(self) -> float:
        return max(1.0, SESSION_S - (time.time() - int(self.issued)))


class ConsoleAccess:
    def __init__(self, auth: AuthConfig, ui: UiConfig, store: StateStore) -> None:
        self.store = store
        self.tenancy = Tenancy.of(auth)
        if auth.metrics_keys is not None:
            operators = digests(auth.metrics_keys)
            self.open = not operators
        else:
            operators = () if self.tenancy.configured else digests(auth.keys)
            self.open = not auth.keys
        self.viewers: dict[bytes, Viewer] = {key: OPERATOR for key in operators}
        if ui.tenant_view:
            for key, space in self.tenancy.spaces.items():
                self.viewers.setdefault(key, Viewer(space, self.tenancy.names.get(space)))
        self.closed = not self.open and not self.viewers  # tenants, and no key may see them all

    async def viewer(self, request: Request) -> Viewer | None:
        """Who the request is (a key in a header, or a sign-in cookie); None: nobody allowed."""
        if self.open:
            return OPERATOR
        key = _basic(request.headers.get("authorization")) or PLACES.credential(request.scope["headers"])
        if key:
            return self._of(hashlib.sha256(key).digest())
        cookie = Cookie.read(request.cookies.get(COOKIE, ""))
        if cookie is None:
            return None
        found = self._signed(cookie)
        if found is None or await self.store.console_session_revoked(cookie.ref):
            return None
        return found

    def sign_in(self, key: str) -> str | None:
        """The cookie value for a key that opens the console, else None."""
        digest = hashlib.sha256(key.encode()).digest()
        if not key or self._of(digest) is None:
            return None
        issued, ref = str(int(time.time())), secrets.token_hex(16)
        return f"{issued}.{ref}.{_mac(digest, issued, ref)}"

    async def sign_out(self, value: str) -> None:
        """Revoke the cookie's sign-in everywhere the store is shared, until it would expire."""
        cookie = Cookie.read(value)
        if cookie is not None and self._signed(cookie) is not None:
            await self.store.revoke_console_session(cookie.ref, cookie.left_s())

    def _of(self, digest: bytes) -> Viewer | None:
        found = None
        for key, viewer in self.viewers.items():  # every key compared: no early exit
            if allowed(digest, (key,)):
                found = viewer
        return found

    def _signed(self, cookie: Cookie) -> Viewer | None:
        found = None
        for key, viewer in self.viewers.items():  # every key compared: no early exit
            if hmac.compare_digest(_mac(key, cookie.issued, cookie.ref), cookie.mac):
                found = viewer
        return found


def _mac(digest: bytes, issued: str, ref: str) -> str:
    return hmac.new(digest, f"loopguard-console:{issued}:{ref}".encode(), hashlib.sha256).hexdigest()


def _basic(header: str | None) -> bytes | None:
    if not header or header[:6].lower() != "basic ":
        return None
    try:
        user, _, password = base64.b64decode(header[6:].strip(), validate=True).partition(b":")
    except (binascii.Error, ValueError):
        return None
    return password or user or None
