"""The stored objects a request body or an answer names (``Owned.fields``, ``Owned.object``).

A request naming another tenant's file, vector store or cached content uses it as surely as a
path naming it does (a batch over another tenant's input file reads it back), so bodies are read
for declared keys at any depth. Not read: what neither the API nor the gateway reads as an
object reference: user metadata and attributes, JSON schemas (a tool may well take a
``file_id`` parameter), and what a model wrote (tool-call arguments, Gemini function calls).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gateway.protocols.declaration import Owned

# Subtrees whose keys are the client's or the model's, not the API's.
_SKIPPED = frozenset(
    {
        "metadata",
        "attributes",
        "parameters",
        "schema",
        "json_schema",
        "input_schema",
        "properties",
        "arguments",
        "args",
        "functionCall",
        "functionResponse",
        "parametersJsonSchema",
        "responseJsonSchema",
        "responseSchema",
        "output_schema",
        "outputSchema",
    }
)


class Malformed(ValueError):
    """A key naming an object holds something no id is (a list where one id goes, an object)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


@dataclass(frozen=True, slots=True)
class Named:
    kind: Owned
    ident: str


def named_in(body: Any, kinds: Iterable[Owned]) -> list[Named]:
    """Every object of ``kinds`` the body names; ``Malformed`` for a value no id can be."""
    by_field = {f: kind for kind in kinds for f in kind.fields}
    found: list[Named] = []
    if by_field:
        _walk(body, by_field, found)
    return found


def _walk(body: Any, by_field: dict[str, Owned], found: list[Named]) -> None:
    """Depth first, without recursion: a body nested as deep as the JSON reader allows is read
    like any other."""
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        if not isinstance(node, dict):
            continue
        model_made = str(node.get("type", "")).endswith("tool_use")  # Anthropic's ``input`` then
        later = []
        for key, value in node.items():
            if not isinstance(key, str) or key in _SKIPPED or (model_made and key == "input"):
                continue
            kind = by_field.get(key)
            if kind is None:
                later.append(value)
                continue
            for ident in _idents(key, value):
                read = ident_of(kind, ident)
                if read is not None:
                    found.append(Named(kind, read))
        stack.extend(reversed(later))


def _idents(key: str, value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [item for item in value if item]
    raise Malformed(key)


def ident_of(kind: Owned, value: str) -> str | None:
    """The id a value names: itself, or for a Google resource the segment after ``{resource}/``
    at the start or after an API version (``cachedContents/abc``,
    ``https://.../v1beta/files/abc``, a bare ``abc``); None when the value names no object of the kind (a web
    page's URL in ``fileUri``, a base ``model``)."""
    if kind.prefix and not value.startswith(kind.prefix):
        return None
    if not kind.resource:
        return value
    found = _resource(kind.resource).search(value)
    if found:
        return found[1]
    return value if "/" not in value else None  # a bare id is one all the same


@functools.lru_cache(maxsize=32)
def _resource(resource: str) -> re.Pattern[str]:
    return re.compile(r"(?:\A|/v\d+(?:alpha|beta)?/)" + re.escape(resource) + r"/([^/:?#]+)")


def created_in(answer: Any, kinds: Iterable[Owned]) -> list[Named]:
    """The objects an answer to the tenant's own object names at its top level: a batch's
    ``output_file_id``, a run's ``thread_id``, a completed upload's ``file``. Only the top level:
    deeper down an answer carries what the client wrote (metadata, file contents)."""
    if not isinstance(answer, dict):
        return []
    found: list[Named] = []
    for kind in kinds:
        for key in kind.fields:
            try:
                idents = _idents(key, answer.get(key))
            except Malformed:
                continue
            found += [Named(kind, read) for i in idents if (read := ident_of(kind, i)) is not None]
        if kind.object:
            for key, value in answer.items():
                if key in _SKIPPED or not isinstance(value, dict):
                    continue
                if value.get("object") == kind.object:
                    ident = value.get("id")
                    if isinstance(ident, str) and ident:
                        found.append(Named(kind, ident))
    return found
