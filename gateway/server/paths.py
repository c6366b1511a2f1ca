"""One spelling per route: request paths are normalised or refused before routing, once.

The router matches the decoded path and the upstream gets the canonical raw path this gate
makes, so the route a request is guarded as and the path the upstream routes are one parse of
the client's request target. Without it, ``/v1/../admin/keys`` reaches the upstream's
``/admin/keys`` with the server's key, and ``/v1//chat/completions``, ``/v1/chat/%63ompletions``
(decoded once more by a URL library on the way), ``.../chat/completions%3Fx`` (split at the
decoded ``?``) or ``.../chat/%2563ompletions`` (decoded twice) are the chat route to the
upstream but not to the router, so they would be relayed unjudged. The rule: a path is a
sequence of non-empty segments, none of them ``.`` or ``..``; percent-encoded letters, digits and
``-_~`` are decoded (they mean the same, RFC 3986 6.2.2.2), every other escape is kept, its hex
in upper case; a byte a path cannot hold as it is (a space, a quote, a brace, a non-ASCII byte)
is percent-encoded. Refused (400): an encoded dot, slash, backslash, ``?``, ``#`` or control
character; a ``%25`` followed by two hex digits (an escape encoded twice: whoever decodes once
more reads another path); a raw backslash, control character or ``#`` (a fragment is never
sent); a malformed escape. One trailing slash is dropped. Under the mount of a protocol whose
model ids may hold a slash (``UpstreamSpec.raw_path``: Bedrock, an ARN's ``%2F``) an encoded
slash is kept, encoded; the path it makes decoded must be canonical too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from gateway.protocols.registry import SPELT_MOUNTS, compile_route
from gateway.server.refusal import Refusal
from gateway.upstream.headers import unsendable_header

# An escape, or a byte a path cannot carry as it is (RFC 3986 ``pchar`` and ``/`` can).
_PIECE = re.compile(rb"%(..)?|[^A-Za-z0-9\-._~!$&'()*+,;=:@/]", re.DOTALL)
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")
_HEX = frozenset(b"0123456789abcdefABCDEF")
# Decoded, these would change which route the path is: a query or fragment starts, a segment
# ends or is a dot segment; a backslash is a slash to some servers.
_STRUCTURAL = frozenset(b"./\\?#")
_TWICE = re.compile(rb"%25[0-9A-Fa-f]{2}")
_VERB = re.compile(r"/[.\s]*:")  # a ``:verb`` a slash, dots or blanks part from its resource


class PathError(ValueError):
    pass


def canonical_path(raw: bytes, slashes: bool = False) -> bytes:
    """The canonical raw path, or PathError saying why there is none. ``slashes``: an encoded
    slash is part of a segment (a path its protocol sends upstream as spelt, an AWS ARN), kept
    encoded; the segments it separates once decoded are held to the same rule."""
    if b"\\" in raw:
        raise PathError("a backslash")
    decoded = _PIECE.sub(_keep_slash if slashes else _piece, raw)
    if _TWICE.search(decoded):  # looked for once decoded: %25%33%46 is %253F too
        raise PathError("an escape encoded twice ('%25' and two hex digits)")
    if slashes and b"%2F" in decoded:
        canonical_path(decoded.replace(b"%2F", b"/"))
    if len(decoded) > 1 and decoded.endswith(b"/") and not decoded.endswith(b"//"):
        decoded = decoded[:-1]  # `/v1/chat/completions/` is the chat route, judged as such
    if not decoded.startswith(b"/"):
        raise PathError("no leading slash")
    if decoded == b"/":
        return decoded
    for segment in decoded[1:].split(b"/"):
        if segment == b"":
            raise PathError("an empty segment (//)")
        if segment in (b".", b".."):
            raise PathError("a '.' or '..' segment")
    return decoded


def _keep_slash(match: re.Match[bytes]) -> bytes:
    pair = match.group(1)
    return b"%2F" if pair is not None and pair.upper() == b"2F" else _piece(match)


def _piece(match: re.Match[bytes]) -> bytes:
    found = match.group(0)
    if found[:1] != b"%":  # a raw byte no path carries as it is: encoded, unless it means more
        byte = found[0]
        if byte < 0x20 or byte == 0x7F:
            raise PathError("a control character")
        if byte == 0x23:
            raise PathError("a '#' (a fragment is never sent)")
        return b"%%%02X" % byte
    pair = match.group(1)
    if pair is None or not set(pair) <= _HEX:
        raise PathError("a malformed percent escape")
    byte = int(pair, 16)
    if byte in _UNRESERVED:
        return bytes((byte,))
    if byte in _STRUCTURAL or byte < 0x20 or byte == 0x7F:
        raise PathError("an encoded dot, slash, backslash, '?', '#' or control character")
    return b"%" + pair.upper()


class PathGuard:
    """A request gate: canonical paths only, and no request header HTTP cannot carry upstream."""

    def __call__(self, scope: dict[str, Any]) -> dict[str, Any] | Refusal:
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        try:
            path = canonical_path(raw, raw.startswith(SPELT_MOUNTS))
            if b"#" in scope.get("query_string", b""):
                raise PathError("a '#' (a fragment is never sent)")
        except PathError as exc:
            return Refusal(
                400, f"The request path is not allowed: it contains {exc}.", "invalid_request_error", "invalid_path"
            )
        bad = unsendable_header(scope["headers"])
        if bad is not None:  # named, never echoed: the value may be a key
            return Refusal(
                400,
                f"The request header {bad!r} has a value HTTP cannot carry "
                "(control characters or leading/trailing whitespace).",
                "invalid_request_error",
                "invalid_header",
            )
        if path != raw or scope.get("raw_path") is None:  # the upstream is sent ``raw_path``
            return {**scope, "path": unquote(path.decode("latin-1")), "raw_path": path}
        return scope


def routing_key(path: str) -> str:
    """What some upstream's router may read ``path`` as: case folded, each segment without its
    ``;parameters``, trailing dots and blanks, empty segments gone, a ``:verb`` joined to the
    resource a slash separates it from (``models/m/:generateContent``, ``models/m/.:...``), and every leading
    ``v1`` dropped (an upstream whose base URL lacks ``/v1`` turns ``/v1/v1/chat/completions``
    into its real chat route)."""
    segments = [s.split(";", 1)[0].strip().rstrip(". ").lower() for s in path.split("/")]
    segments = [s for s in segments if s]
    while segments and segments[0] == "v1":
        segments.pop(0)
    return _VERB.sub(":", "/".join(segments))


class GuardedSpellings:
    """A request gate: a guarded route is reached only by its own spelling and method. Another
    spelling an upstream could route to it is refused (400), and a method the protocol does not
    define there is refused (405): relayed, either would reach the model unjudged. Declared
    patterns (Google's ``/v1beta/models/{model}:generateContent``) are held to it alike.

    Stored-object routes (``objects``: the collections of ``Declaration.owned`` whose upstream
    gets the gateway's own key) are held to one spelling too, for every method and whatever
    hangs below them: ``/v1/v1/responses/{id}`` or ``/v1/Responses/{id}`` would reach the
    upstream's object by a path the tenant check does not know."""

    def __init__(
        self,
        guarded: Iterable[str],
        other_methods: dict[str, tuple[str, ...]],
        patterns: Iterable[str] = (),
        objects: Iterable[str] = (),
    ) -> None:
        """``other_methods``: path or pattern -> the methods besides POST its protocol defines
        there (``Declaration.other_methods``), relayed untouched."""
        self.guarded = frozenset(guarded)
        self.keys = {routing_key(path): path for path in sorted(self.guarded, key=len)}
        self.other_methods = other_methods
        patterns = tuple(patterns)
        self.patterns = tuple((compile_route(p), p) for p in patterns)
        self.pattern_keys = tuple((compile_route(routing_key(p)), p) for p in patterns)
        self.objects = tuple(sorted(set(objects)))
        self.object_keys = {routing_key(c): c for c in sorted(self.objects, key=len, reverse=True)}

    def __call__(self, scope: dict[str, Any]) -> dict[str, Any] | Refusal:
        path = scope["path"]
        declared = path if path in self.guarded else _first(self.patterns, path)
        if declared is not None:
            method = scope["method"]
            if method == "POST" or method in self.other_methods.get(declared, ()):
                return scope
            allow = ", ".join(("POST", *self.other_methods.get(declared, ())))
            return Refusal(
                405,
                f"{method} is not allowed on {path} (allowed: {allow}).",
                "invalid_request_error",
                "method_not_allowed",
                ((b"allow", allow.encode()),),
            )
        key = routing_key(path)
        canonical = self.keys.get(key) or _first(self.pattern_keys, key) or self._object(path, key)
        if canonical is None:
            return scope
        return Refusal(
            400,
            f"The request path is not allowed: it is another spelling of {canonical}.",
            "invalid_request_error",
            "invalid_path",
        )

    def _object(self, path: str, key: str) -> str | None:
        """The stored-object collection ``path`` is another spelling of (or below); None when it
        is spelt as declared or names none."""
        if any(path == c or path.startswith(c + "/") for c in self.objects):
            return None
        return next((c for k, c in self.object_keys.items() if key == k or key.startswith(k + "/")), None)


def _first(patterns: tuple[tuple[re.Pattern[str], str], ...], path: str) -> str | None:
    return next((declared for regex, declared in patterns if regex.match(path)), None)
