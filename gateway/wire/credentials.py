"""How a client presents its key: the one reading shared by the client-key gate, the console
login and the session namespace.

The places a key may sit are the protocols' (``Authorization``, ``x-api-key``, Google's
``?key=``...): the caller passes them in as a :class:`KeyPlaces`, built once from the adapters'
declarations. The rule is fixed here: a bearer token first, else the first non-empty key header
in declared order, else a key in the query, else a non-bearer ``Authorization`` value whole (it
still tells clients apart), or, for a request signature that changes with every request, the
part a protocol says names its client (``KeyPlaces.signed``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import unquote_to_bytes

_AUTHORIZATION = b"authorization"


@dataclass(frozen=True, slots=True)
class KeyPlaces:
    """Where a client's key may sit: ``headers`` (lower case, in the order they are tried after
    a bearer token) and ``query`` parameters."""

    headers: tuple[str, ...]
    query: tuple[str, ...] = ()
    # How a non-bearer ``Authorization`` value names its client when the value itself changes
    # on every request (a request signature: AWS's names the access key id it was made with);
    # each answers the stable part, or None when the value is not of its scheme.
    signed: tuple[Callable[[bytes], bytes | None], ...] = ()
    names: frozenset[bytes] = field(init=False)  # every header that carries a key, as bytes
    _others: tuple[bytes, ...] = field(init=False)
    _query_keys: frozenset[bytes] = field(init=False)

    def __post_init__(self) -> None:
        encoded = tuple(name.lower().encode("latin-1") for name in self.headers)
        object.__setattr__(self, "names", frozenset((_AUTHORIZATION, *encoded)))
        object.__setattr__(self, "_others", tuple(n for n in encoded if n != _AUTHORIZATION))
        object.__setattr__(self, "_query_keys", frozenset(q.encode("latin-1") for q in self.query))

    def credential(self, headers: Iterable[tuple[bytes, bytes]], query: bytes = b"") -> bytes | None:
        """The client's key from raw (ASGI) headers and query string; ``b""`` for an empty
        bearer token, None for no key at all. The first of each repeated header counts."""
        found: dict[bytes, bytes] = {}
        for name, value in headers:
            name = name.lower()
            if name in self.names and name not in found:
                found[name] = value
        return self._read(found.get, query)

    def credential_hash(self, headers: Mapping[str, str]) -> str | None:
        """The SHA-256 (hex) of the key in already-decoded headers (lower-case names), as the
        client-key gate sets it in ``x-loopguard-client``; None without a key."""

        def get(name: bytes) -> bytes | None:
            value = headers.get(name.decode("latin-1"))
            return None if value is None else value.encode("latin-1", "replace")

        token = (self._read(get, b"") or b"").strip()
        return hashlib.sha256(token).hexdigest() if token else None

    def query_key(self, query: bytes) -> bytes | None:
        """A key the client put in the query string (the first, by any spelling of its name)."""
        for part in query.split(b"&") if query and self._query_keys else ():
            if parameter_name(part) in self._query_keys:
                return unquote_to_bytes(part.partition(b"=")[2]) or None
        return None

    def without_query_keys(self, query: bytes) -> bytes:
        """``query`` without any parameter that carries a key, by any spelling of its name."""
        return without_parameters(query, self._query_keys)

    def _read(self, get: Callable[[bytes], bytes | None], query: bytes) -> bytes | None:
        auth = get(_AUTHORIZATION)
        if auth is not None:
            scheme, _, token = auth.partition(b" ")
            if scheme.lower() == b"bearer":
                return token.strip()
        for name in self._others:
            if value := get(name):
                return value
        return self.query_key(query) or self._signer(auth)

    def _signer(self, auth: bytes | None) -> bytes | None:
        """A non-bearer ``Authorization`` whole, or the client a request signature names."""
        if auth is not None:
            for read in self.signed:
                if (client := read(auth)) is not None:
                    return client
        return auth


def parameter_name(pair: bytes) -> bytes:
    """A query parameter's name as Google's frontend reads it: percent-decoded, a leading ``$``
    dropped (``key``, ``$key`` and ``%6Bey`` are one parameter)."""
    return unquote_to_bytes(pair.partition(b"=")[0].replace(b"+", b" ")).removeprefix(b"$")


def without_parameters(query: bytes, names: frozenset[bytes]) -> bytes:
    """``query`` without the parameters named ``names``, however their names are spelt."""
    return b"&".join(p for p in query.split(b"&") if parameter_name(p) not in names) if names else query
