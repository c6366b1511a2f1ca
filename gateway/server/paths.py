"""One spelling per route: request paths are normalised or refused before routing.

The router matches the decoded path, the upstream URL is built from it, and a URL library on
the way may resolve ``..`` itself. Without one canonical form, ``/v1/../admin/keys`` reaches
the upstream's ``/admin/keys`` with the server's key, and ``/v1//chat/completions`` or
``/v1/chat/%63ompletions`` is the chat route to the upstream but not to the router, so it is
relayed unjudged. The rule: a path is a sequence of non-empty segments, none of them ``.`` or
``..``; percent-encoded letters, digits and ``-_~`` are decoded (they mean the same, RFC 3986
6.2.2.2); an encoded dot, slash, backslash or control character, a raw backslash, or a
malformed escape is refused; one trailing slash is dropped. Refusals are 400s. Under the mount
of a protocol whose upstream gets the path as spelt (``UpstreamSpec.raw_path``: Bedrock, whose
model ids may be ARNs with a ``%2F``), an encoded slash is kept, encoded; the path it makes
decoded must be canonical too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote

from gateway.protocols.registry import SPELT_MOUNTS, compile_route
from gateway.server.refusal import Refusal
from gateway.upstream.headers import unsendable_header

_ESCAPE = re.compile(rb"%(..)?", re.DOTALL)
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_~")
_HEX = frozenset(b"0123456789abcdefABCDEF")


class PathError(ValueError):
    pass


def canonical_path(raw: bytes, slashes: bool = False) -> bytes:
    """The canonical raw path, or PathError saying why there is none. ``slashes``: an encoded
    slash is part of a segment (a path its protocol sends upstream as spelt, an AWS ARN), kept
    encoded; the segments it separates once decoded are held to the same rule."""
    if b"\\" in raw:
        raise PathError("a backslash")
    decoded = _ESCAPE.sub(_unescape_slash if slashes else _unescape, raw)
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


def _unescape_slash(match: re.Match[bytes]) -> bytes:
    pair = match.group(1)
    return b"%2F" if pair is not None and pair.upper() == b"2F" else _unescape(match)


def _unescape(match: re.Match[bytes]) -> bytes:
    pair = match.group(1)
    if pair is None or not set(pair) <= _HEX:
        raise PathError("a malformed percent escape")
    byte = int(pair, 16)
    if byte in _UNRESERVED:
        return bytes((byte,))
    if byte in b"./\\" or byte < 0x20 or byte == 0x7F:
        raise PathError("an encoded dot, slash, backslash or control character")
    return b"%" + pair.upper()


class PathGuard:
    """A request gate: canonical paths only, and no request header HTTP cannot carry upstream."""

    def __call__(self, scope: dict[str, Any]) -> dict[str, Any] | Refusal:
        raw = scope.get("raw_path") or scope["path"].encode("utf-8")
        try:
            path = canonical_path(raw, raw.startswith(SPELT_MOUNTS))
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
        if path != raw:
            return {**scope, "path": unquote(path.decode("latin-1")), "raw_path": path}
        return scope


def routing_key(path: str) -> str:
    """What some upstream's router may read ``path`` as: case folded, each segment without its
    ``;parameters``, trailing dots and blanks, empty segments gone, and every leading ``v1``
    dropped (an upstream whose base URL lacks ``/v1`` turns ``/v1/v1/chat/completions`` into its
    real chat route)."""
    segments = [s.split(";", 1)[0].strip().rstrip(". ").lower() for s in path.split("/")]
    segments = [s for s in segments if s]
    while segments and segments[0] == "v1":
        segments.pop(0)
    return "/".join(segments)


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
