"""Searching a result with a union of patterns, skipped when the text cannot match.

Each new tool result is searched with the policy's unions of error, failure and unknown-tool
patterns. Python's ``re`` tries every alternative at every position (case-insensitively, for
most), some 40-170 us on a 500-character result, though nearly every result matches none. Most
alternatives cannot match without some literal text ("error", "Traceback (most recent call
last)", "No such file or directory"): read from the pattern when the policy loads, those
"needles" are looked for first, with ``str`` searches at C speed, and the regex runs only when
one of them is in the text.

The needles of a pattern are a necessary condition, never a guess: every match contains at least
one of them. They are taken from the parsed pattern (literal runs of each sequence; the union of
a branch's alternatives; the body of a repeat that runs at least once; never from a lookaround,
which may look outside the match) and lowercased, and the text is lowercased too, so a match with
any case flag still contains its needle. Only ASCII needles in ASCII text are trusted: a case-
insensitive ``re`` equates a few non-ASCII letters with ASCII ones (the long s with "s", the
Kelvin sign with "k") that lowercasing does not. A pattern with an alternative that needs no
literal (a date, a hex id) gets no needles: its regex always runs.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from re import _constants as codes  # type: ignore[attr-defined]  # the parser re itself uses
from re import _parser as parser  # type: ignore[attr-defined]
from typing import Any

_Needles = frozenset[str] | None  # None: no literal every match holds (the regex must run)


@dataclass(frozen=True, slots=True)
class Scanner:
    """``regex`` with the needles one of which each of its matches contains."""

    regex: re.Pattern[str]
    needles: tuple[str, ...] | None

    @classmethod
    def of(cls, regex: re.Pattern[str]) -> Scanner:
        found = needles(regex)
        return cls(regex, tuple(sorted(found, key=len, reverse=True)) if found is not None else None)

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> bool:
        """Whether ``regex.search(text, pos, endpos)`` finds a match."""
        found = self.needles
        if found is not None and text.isascii():
            window = text[pos:endpos].lower()
            if not any(needle in window for needle in found):
                return False
        return self.regex.search(text, pos, endpos) is not None


def needles(regex: re.Pattern[str]) -> frozenset[str] | None:
    """Lowercased ASCII literals one of which every match of ``regex`` contains, or None."""
    try:
        parsed = parser.parse(regex.pattern, regex.flags)
    except Exception:  # an internal parser of another release: no needles, the regex runs
        return None
    found = _sequence(list(parsed))
    if not found or not all(needle and needle.isascii() for needle in found):
        return None
    return found


def _sequence(items: list[tuple[Any, Any]]) -> _Needles:
    """Needles of consecutive items: any one item's serve (all of them are in the match); the
    most selective set is kept (the one whose shortest needle is longest)."""
    options: list[frozenset[str]] = []
    run: list[str] = []
    for op, value in items:
        if op is codes.LITERAL:
            run.append(chr(value).lower())
            continue
        if run:
            options.append(frozenset({"".join(run)}))
            run = []
        found = _item(op, value)
        if found:
            options.append(found)
    if run:
        options.append(frozenset({"".join(run)}))
    return max(options, key=lambda option: min(map(len, option)), default=None)


def _item(op: Any, value: Any) -> _Needles:
    if op is codes.SUBPATTERN:
        return _sequence(list(value[-1]))
    if op is codes.BRANCH:
        out: set[str] = set()
        for branch in value[1]:
            found = _sequence(list(branch))
            if not found:
                return None
            out |= found
        return frozenset(out)
    if op in (codes.MAX_REPEAT, codes.MIN_REPEAT, codes.POSSESSIVE_REPEAT) and value[0] >= 1:
        return _sequence(list(value[2]))
    if op is codes.ATOMIC_GROUP:
        return _sequence(list(value))
    return None  # a class, any character, an anchor, a lookaround, a back reference: no literal
