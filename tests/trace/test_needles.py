"""A union of patterns searched after its needles finds exactly what the regex finds."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.fixture_runs import corpus_runs, recorded_runs

from gateway.agents.catalog import derive
from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.trace.needles import Scanner, needles

POLICY = PolicyHolder(Config().policy).current.resolve()


def every_settings():
    """The shipped default's trace settings and each shipped agent profile's."""
    catalog = POLICY.catalog
    yield POLICY.trace_settings
    for profile in catalog.profiles if catalog is not None else ():
        yield derive(POLICY.trace_settings, profile)


SCANNERS = [
    (name, scan)
    for number, found in enumerate(every_settings())
    for name, scan in (
        (f"{number}: error", found.scans.error),
        (f"{number}: failure", found.scans.failure),
        (f"{number}: unknown tool", found.scans.unknown),
        (f"{number}: empty", found.scans.empty),
        (f"{number}: polling", found.scans.polling),
    )
    if scan is not None
]


def agrees(scan: Scanner, text: str, pos: int = 0, endpos: int = 10**9) -> None:
    assert scan.search(text, pos, endpos) == (scan.regex.search(text, pos, endpos) is not None), text[:200]


def results() -> list[str]:
    """Tool results agents really sent: the recorded CLI sessions and the corpus."""
    out = []
    for run in recorded_runs() + corpus_runs():
        for message in run.body.get("messages", []):
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, str) and message.get("role") in ("tool", "user"):
                out.append(content)
    return out


def test_the_shipped_unions_have_needles():
    """The point of it: the error and unknown-tool unions of the shipped default need one of
    their literals, so a result holding none skips the regex."""
    assert SCANNERS[0][1].needles is not None and "traceback (most recent call last)" in SCANNERS[0][1].needles
    assert POLICY.trace_settings.scans.unknown.needles is not None


def members(found) -> list[tuple[Scanner, tuple[str, ...]]]:
    """Each union scanner of ``found`` with the patterns it joins (compiled with its flags)."""
    scans = found.scans
    joined = [
        (scans.error, found.error_patterns + found.extra_error_patterns),
        (scans.failure, found.failure_patterns),
        (scans.unknown, found.unknown_tool_patterns),
        (scans.empty, found.empty_patterns),
        (scans.polling, found.polling_args_patterns),
    ]
    return [(union, patterns) for union, patterns in joined if union is not None]


# Every pattern of the shipped default and profiles, once (profiles share most of them), with
# the flags of the union it is searched in.
PATTERNS = sorted(
    {(p, union.regex.flags) for found in every_settings() for union, joined in members(found) for p in joined}
)


def test_on_results_agents_sent_every_match_holds_a_needle():
    """What makes a scanner agree with its regex on a text: a match holds one of its needles, so a
    text without any is rightly skipped, and with one the regex itself answers. Checked for each
    pattern on the results agents really sent (whole, and their first and last 300 characters);
    text beyond ASCII is always searched by the regex, so only ASCII text can disagree."""
    texts = [(text, text.lower()) for text in set(results()) if text.isascii()]
    assert texts
    for pattern, flags in PATTERNS:
        scan = Scanner.of(re.compile(pattern, flags))
        if scan.needles is None:
            continue  # its regex always runs
        for text, low in texts:
            for pos, end in ((0, len(text)), (0, 300), (max(0, len(text) - 300), len(text))):
                if scan.regex.search(text, pos, end):
                    assert any(needle in low[pos:end] for needle in scan.needles), (pattern, text[:200])


def test_a_unions_needles_cover_each_of_its_patterns():
    """A union is skipped only when none of its patterns could match: each needle of each pattern
    holds one of the union's needles, and a pattern without needles leaves the union without."""
    for found in every_settings():
        for union, joined in members(found):
            own = [needles(re.compile(p, union.regex.flags)) for p in joined]
            if any(n is None for n in own):
                assert union.needles is None
                continue
            assert union.needles is not None
            for needle in frozenset().union(*own):
                assert any(u in needle for u in union.needles), needle


# Pieces of what the shipped patterns look for, in several cases, with the characters around
# them that decide word boundaries and line starts.
PIECES = st.sampled_from(
    [
        "Error",
        "ERROR",
        "error",
        "Traceback (most recent call last)",
        "exit code 1",
        "Exit Status: 2",
        "No such file or directory",
        "command not found",
        "npm ERR!",
        "fatal: ",
        "404 Not Found",
        '"is_error": true',
        "user denied",
        "unknown tool",
        "tool foo does not exist",
        "ValueError: ",
        "x.py:3:1: E999 ",
        "<tool_use_error>",
        "String to replace not found",
        "ſ",
        "K",
        "İ",
        "é",
    ]
)
NOISE = st.text(alphabet=st.sampled_from(list("ab1 :\n\t-_\"'()[]{}.é")), max_size=8)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(PIECES, NOISE), max_size=8), st.integers(0, 40), st.integers(0, 80))
def test_on_any_mix_of_their_pieces_every_scanner_agrees_with_its_regex(parts, pos, endpos):
    text = "".join(parts)
    for _, scan in SCANNERS:
        agrees(scan, text)
        agrees(scan, text, pos, endpos)


@pytest.mark.parametrize(
    ("pattern", "flags", "expected"),
    [
        (r"\bTraceback \(most", 0, {"traceback (most"}),
        (r"(?:exit|return) code [1-9]", re.I, {" code "}),
        (r"(?=foo)bar", 0, {"bar"}),  # a lookahead's text may lie outside the match
        (r"a?bc", 0, {"bc"}),
        (r"(?:ab)+c", 0, {"ab"}),
        (r"[Ee]rror", 0, {"rror"}),
        (r"\d{4}-\d{2}|\berror\b", 0, {"-", "error"}),
        (r"\b[0-9a-f]{16,}\b|\berror\b", 0, None),  # a hex id needs no literal: the regex always runs
        (r"(?:x)*", 0, None),
        (r"falſe", re.I, None),  # not ASCII: lowercasing does not say what re equates
    ],
)
def test_needles_are_literals_every_match_holds(pattern, flags, expected):
    found = needles(re.compile(pattern, flags))
    assert (set(found) if found is not None else None) == expected


def test_text_beyond_ascii_is_always_searched():
    scan = Scanner.of(re.compile("false", re.I))
    assert scan.needles == ("false",)
    assert scan.search("FALſE") and re.search("false", "FALſE", re.I)  # the long s is an s to re
