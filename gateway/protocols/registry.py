"""The guarded protocols: one line each. Everything else that depends on which protocols exist
(routes, upstreams, refusals, metrics labels, trace attributes, replay, secret headers, id
fields) is read from here and from each protocol's ``Declaration``.

``KINDS`` are the protocols before any app: immutable, shared. An app serves requests through
its own adapters (``build``), so what a protocol remembers between the calls of an exchange is
that app's alone.

Order matters in one place only: ``loopguard replay`` asks each protocol in turn whether a
recorded body is its own, so the most specific reader comes first and chat (any ``messages``
list) last (the protocols that carry chat's or Responses' bodies on a cloud's routes, Azure's
and the OpenAI-compatible APIs of Bedrock, Vertex and Gemini, read none: those bodies are
replayed as chat's and Responses'). Routes never compete: each path is one protocol's (Azure's
all lie under ``/openai/``, the clouds' under their mounts, and a protocol's general pattern,
``/vertex/{rest:path}:generateContent``, ends where no other protocol's route ends). The default upstream's protocol (``UpstreamSpec.config is None``) shapes the
errors of paths no protocol claims.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from gateway.protocols.anthropic import protocol as anthropic
from gateway.protocols.azure import protocol as azure
from gateway.protocols.bedrock import openai as bedrock_openai
from gateway.protocols.bedrock import protocol as bedrock
from gateway.protocols.chat import protocol as chat
from gateway.protocols.converse import protocol as converse
from gateway.protocols.gemini import openai as gemini_openai
from gateway.protocols.gemini import protocol as gemini
from gateway.protocols.responses import protocol as responses
from gateway.protocols.roles import Adapter, Kind
from gateway.protocols.vertex import anthropic as vertex_anthropic
from gateway.protocols.vertex import chat as vertex_chat
from gateway.protocols.vertex import gemini as vertex_gemini
from gateway.wire.credentials import KeyPlaces

KINDS: tuple[Kind, ...] = (
    converse.KIND,  # before anthropic: a Converse body with a system prompt reads as one too
    vertex_anthropic.KIND,  # an Anthropic body under a Vertex anthropic_version: before bedrock's
    bedrock.KIND,  # an Anthropic body naming no model: read before anthropic's
    anthropic.KIND,
    responses.KIND,
    gemini.KIND,
    azure.RESPONSES_KIND,
    azure.CHAT_KIND,
    bedrock_openai.RESPONSES_KIND,
    bedrock_openai.CHAT_KIND,
    vertex_gemini.KIND,
    vertex_chat.KIND,
    gemini_openai.KIND,
    chat.KIND,
)

BY_NAME: Mapping[str, Kind] = MappingProxyType({kind.name: kind for kind in KINDS})
DEFAULT: Kind = next(k for k in KINDS if k.declared.upstream.config is None)
# Client headers that carry a key, in the order the protocols declare them (lower case).
CREDENTIALS: tuple[str, ...] = tuple(dict.fromkeys(h for k in KINDS for h in k.declared.upstream.credentials))
# Header names that carry a key in some protocol: never logged, and (with ``auth.keys``) never
# forwarded. Lower case.
SECRET_HEADERS: frozenset[str] = frozenset(h for k in KINDS for h in k.declared.secret_headers)
# Query parameters that carry a key in some protocol (Google's ``?key=``).
SECRET_QUERY: frozenset[str] = frozenset(q for k in KINDS for q in k.declared.upstream.credential_query)
# Where a client's key may sit, for the one credential reader (``gateway.wire.credentials``).
KEY_PLACES = KeyPlaces(
    CREDENTIALS,
    tuple(sorted(SECRET_QUERY)),
    tuple(read for k in KINDS if (read := k.declared.upstream.signed_client) is not None),
)
# Path prefixes (``mount/``) whose paths go upstream as the client spelt them, an encoded slash
# included (``UpstreamSpec.raw_path``): the path gate keeps a ``%2F`` there.
SPELT_MOUNTS: tuple[bytes, ...] = tuple(
    (spec.mount + "/").encode() for k in KINDS if (spec := k.declared.upstream).raw_path and spec.mount
)
# Keys whose values are ids a model made up, in any protocol's entries.
ID_FIELDS: frozenset[str] = frozenset(f for k in KINDS for f in k.declared.id_fields)


@dataclass(frozen=True, slots=True)
class Protocols:
    """One app's adapters, in ``KINDS``' order."""

    adapters: tuple[Adapter, ...]

    def named(self, name: str) -> Adapter:
        return next(a for a in self.adapters if a.name == name)

    @property
    def default(self) -> Adapter:
        """The default upstream's protocol: it shapes the errors of paths no protocol claims."""
        return self.named(DEFAULT.name)


def build() -> Protocols:
    """A fresh set of adapters for one app: none shares memory with another app's."""
    return Protocols(tuple(kind.build() for kind in KINDS))


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
EXACT: Mapping[str, Kind] = MappingProxyType({path: k for k in KINDS for path in k.declared.routes if "{" not in path})
PATTERNS: tuple[tuple[re.Pattern[str], str, Kind], ...] = tuple(
    (compile_route(path), path, k) for k in KINDS for path in k.declared.routes if "{" in path
)


def relay_route(relay: str) -> tuple[str, list[str] | None]:
    """A declared relay as (path pattern, methods); None: every method."""
    method, _, path = relay.rpartition(" ")
    return path, [method] if method else None


RELAYS: tuple[tuple[re.Pattern[str], str, Kind], ...] = tuple(
    (compile_route(relay_route(r)[0]), relay_route(r)[0], k) for k in KINDS for r in k.declared.relays
)


# Model calls of a protocol's upstream that no protocol judges (``Declaration.unjudged``), as
# (regex, the declared route): refused unless the operator relays them unjudged.
UNJUDGED: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (compile_route(route), route) for k in KINDS for route in k.declared.unjudged
)


def guarded_route(path: str) -> tuple[str, Kind] | None:
    """The declared route a path is guarded on (the path itself or its pattern) and its
    protocol; None when no protocol guards it."""
    kind = EXACT.get(path)
    if kind is not None:
        return path, kind
    for regex, pattern, kind in PATTERNS:
        if regex.match(path):
            return pattern, kind
    return None


def protocol_of(path: str) -> Kind | None:
    """The protocol a path belongs to, guarded or relayed; None for the rest."""
    found = guarded_route(path)
    if found is not None:
        return found[1]
    return next((kind for regex, _, kind in RELAYS if regex.match(path)), None)


def reader_of(body: Mapping[str, Any]) -> Kind | None:
    """The protocol a recorded request body is written in, or None."""
    return next((k for k in KINDS if k.declared.reads(body)), None)
