"""A failure's shape: the refusal without the attempt it echoes.

Editors and linters refuse an edit by quoting it ("No replacement was performed, old_str `x = 1`
did not appear verbatim in /repo/a.py", SWE-agent's "This is how your edit would have looked"
window): each new attempt makes the refusal's text new, so comparing texts reads a loop of
refusals as progress. The shape drops every argument value quoted whole, every line the
arguments contain (line-number prefixes and a patch's ``+``/``-`` markers ignored: Codex's
``apply_patch`` refusal quotes the lines it could not find without them), and digits (line
numbers, counts); two refusals of the same kind, on the same file, have the same shape whatever
the attempt was.

One failure is one failure whichever program reports it: a short failure saying a path does not
exist (``No such file or directory``, ``File does not exist``, ``FileNotFoundError``, ``ENOENT``
...) has the one shape "missing path", and one saying access is denied "permission denied", so
the same missing file read with the read tool, then ``cat``, then a one-liner fails the same way.
"""

from __future__ import annotations

import re
from typing import Any

SHAPE_CHARS = 4000  # a refusal's kind is stated near its start; the rest is the echo
_MIN_ECHO = 4  # shorter values ("a", "x=1") are too common to remove from a text
_LINE_NUMBER = re.compile(r"^\s*\d+\s*[:|\t]\s?")
_DIGITS = re.compile(r"\d+")
_DIFF_MARK = re.compile(r"^[+-](?![+-])")
# A program's own words for a path that is not there, or not for it: the kinds of failure every
# file tool and program shares. Only short failures are read this way (a test run's traceback
# that mentions a missing file somewhere is the test's failure, not this one).
_KINDS = (
    (
        "missing path",
        re.compile(
            r"No such file or directory|(?:file|path|directory)\b.{0,200}?\b(?:does not|doesn't) exist|"
            r"FileNotFoundError|\bENOENT\b|[Cc]annot find (?:the )?(?:file|path)|[Cc]an(?:no|')t open file|"
            r"\bFile not found\b|\bno such file\b",
            re.IGNORECASE,
        ),
    ),
    ("permission denied", re.compile(r"Permission denied|\bEACCES\b|PermissionError", re.IGNORECASE)),
)
_KIND_CHARS = 600


def failure_shape(result: str, value: Any, raw_args: str) -> str:
    """The result's text without the echo of the call's arguments (parsed ``value``; the raw
    text when not JSON), digits folded, whitespace collapsed, lower-case."""
    return failure_shapes(result, value, raw_args)[0]


def failure_shapes(result: str, value: Any, raw_args: str) -> tuple[str, str]:
    """(shape, failure): ``failure_shape``, and the same text with only the places in the text
    folded (line and column numbers), not its other numbers. The shape tells two refusals of one
    kind apart from the attempts they echo; the failure tells whether a fix made a difference
    (``returned -1`` then ``returned 6`` after an edit: it did; the same error on another line:
    it did not)."""
    if len(result) <= _KIND_CHARS:
        kind = next((name for name, said in _KINDS if said.search(result)), None)
        if kind is not None:
            return kind, kind
    strings = sorted(_strings(value) if value is not None else [raw_args], key=len, reverse=True)
    text = result[:SHAPE_CHARS]
    for s in strings:  # quoted whole, longest first: "old_str `<the attempt>` did not appear"
        if len(s) >= _MIN_ECHO:
            text = text.replace(s, "")
    # Shown line by line, with line numbers: "This is how your edit would have looked".
    echoed = {
        line
        for s in strings
        for raw in s.splitlines()
        if len(line := _DIFF_MARK.sub("", raw.strip()).strip()) >= _MIN_ECHO
    }
    kept = "\n".join(
        line for line in text.splitlines() if (body := _LINE_NUMBER.sub("", line).strip()) and body not in echoed
    )
    return " ".join(_DIGITS.sub("#", kept).lower().split()), " ".join(_PLACES.sub("#", kept).lower().split())


# Where in a file a failure is: "line 12", "a.py:12:5", "a.ts(12,5)", "col 7", "at 12:5".
_PLACES = re.compile(r"(?i)\b(?:line|ln|col|column)\s*#?\d+|(?<=\w):\d+(?::\d+)?\b|\(\d+,\s*\d+\)|\bat \d+:\d+")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []
