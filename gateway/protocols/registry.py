"""The guarded protocols: one line each. Everything else that depends on which protocols exist
(routes, upstreams, refusals, metrics labels, trace attributes, replay, secret headers, id
fields) is read from here and from each adapter's ``Declaration``.

Order matters in one place only: ``loopguard replay`` asks each adapter in turn whether a
recorded body is its own, so the most specific reader comes first and chat (any ``messages``
list) last. The default upstream's protocol (``UpstreamSpec.config is None``) shapes the
errors of paths no protocol claims.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway.protocols.anthropic.adapter import ANTHROPIC
from gateway.protocols.base import Adapter
from gateway.protocols.chat.adapter import CHAT
from gateway.protocols.gemini.adapter import GEMINI
from gateway.protocols.responses.adapter import RESPONSES
from gateway.wire.credentials import KeyPlaces

ADAPTERS: tuple[Adapter, ...] = (
    ANTHROPIC,
    RESPONSES,
    GEMINI,
    CHAT,
)

BY_NAME: dict[str, Adapter] = {adapter.name: adapter for adapter in ADAPTERS}
DEFAULT: Adapter = next(a for a in ADAPTERS if a.declared.upstream.config is None)
# Client headers that carry a key, in the order the adapters declare them (lower case).
CREDENTIALS: tuple[str, ...] = tuple(dict.fromkeys(h for a in ADAPTERS for h in a.declared.upstream.credentials))
# Header names that carry a key in some protocol: never logged, and (with ``auth.keys``) never
# forwarded. Lower case.
SECRET_HEADERS: frozenset[str] = frozenset(h for a in ADAPTERS for h in a.declared.secret_headers)
# Query parameters that carry a key in some protocol (Google's ``?key=``).
SECRET_QUERY: frozenset[str] = frozenset(q for a in ADAPTERS for q in a.declared.upstream.credential_query)
# Where a client's key may sit, for the one credential reader (``gateway.wire.credentials``).
KEY_PLACES = KeyPlaces(CREDENTIALS, tuple(sorted(SECRET_QUERY)))
# Keys whose values are ids a model made up, in any protocol's entries.
ID_FIELDS: frozenset[str] = frozenset(f for a in ADAPTERS for f in a.declared.id_fields)


# A path parameter: ``{name}`` is one segment (Starlette's default), ``{name:path}`` the rest.
_PARAM = re.compile(r"\{([a-z_]+)(:path)?\}")


def compile_route(pattern: str) -> re.Pattern[str]:
    """A declared path pattern (``Declaration.routes`` / ``relays``) as a regex."""
    parts, at = [], 0
    for match in _PARAM.finditer(pattern):
        parts.append(re.escape(pattern[at : match.start()]))
        parts.append(f"(?P<{match[1]}>.+)" if match[2] else f"(?P<{match[1]}>[^/]+)")
        at = match.end()
    parts.append(re.escape(pattern[at:]))
    return re.compile("".join(parts) + r"\Z")


# Guarded paths: exact ones by dict lookup (every request checks), patterns in declared order.
EXACT: dict[str, Adapter] = {path: a for a in ADAPTERS for path in a.declared.routes if "{" not in path}
PATTERNS: tuple[tuple[re.Pattern[str], str, Adapter], ...] = tuple(
    (compile_route(path), path, a) for a in ADAPTERS for path in a.declared.routes if "{" in path
)


def relay_route(relay: str) -> tuple[str, list[str] | None]:
    """A declared relay as (path pattern, methods); None: every method."""
    method, _, path = relay.rpartition(" ")
    return path, [method] if method else None


RELAYS: tuple[tuple[re.Pattern[str], str, Adapter], ...] = tuple(
    (compile_route(relay_route(r)[0]), relay_route(r)[0], a) for a in ADAPTERS for r in a.declared.relays
)


def guarded_route(path: str) -> tuple[str, Adapter] | None:
    """The declared route a path is guarded on (the path itself or its pattern) and its
    adapter; None when no protocol guards it."""
    adapter = EXACT.get(path)
    if adapter is not None:
        return path, adapter
    for regex, pattern, adapter in PATTERNS:
        if regex.match(path):
            return pattern, adapter
    return None


def protocol_of(path: str) -> Adapter | None:
    """The protocol a path belongs to, guarded or relayed; None for the rest."""
    found = guarded_route(path)
    if found is not None:
        return found[1]
    return next((adapter for regex, _, adapter in RELAYS if regex.match(path)), None)


def reader_of(body: Mapping[str, Any]) -> Adapter | None:
    """The protocol a recorded request body is written in, or None."""
    return next((a for a in ADAPTERS if a.declared.reads(body)), None)
