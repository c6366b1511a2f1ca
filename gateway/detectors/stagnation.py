"""stagnation: near-identical requests answered by near-identical results.

An orchestrator asks a sub-agent (a tool) for the same thing, reworded each time ("search for X",
"please look up X again", "find X on the website"), and gets answers that differ in detail but
say nothing new. Neither no_progress (needs the same arguments and result) nor similar_repeat
(needs character-similar arguments, and identical results or failures) sees it.

Count = the latest call and its predecessors of the same tool, in a row (neutral calls such as
think/plan/log stepped over), each similar to the latest in request and in result:

- request: the canonical arguments' rapidfuzz indel similarity >= ``min_args_similarity``, or,
  when both carry free text (a sub-agent's task), the texts' token-set similarity >=
  ``min_text_similarity`` (rewording and added words cost little);
- result: both succeeded or both failed, each at least ``min_result_chars`` long, and their
  normalized texts (lower-case, whitespace collapsed, the first ``result_chars`` characters: what
  was done and where it left things, an echo of the request's own text removed) have indel
  similarity >= ``min_result_similarity``.

Never a member: results that differ only in their numbers (polling progress, a debugger's line,
a clock, the next page's ids: the output moves), and results that name the part of the request
that differs (a path, an id: another file or record, not the same request). Paginated reads, many
files, larger limits return different text, so they never count.

Or, when both carry free text, by what the sub-agent *did*: an orchestrator rewording its
request more freely (token-set similarity >= ``min_action_similarity``) is answered each time by
a transcript worded anew whose first line, the action it took ("I clicked 'Refund policy'",
"Opened https://..."), is the same (at least ``min_action_chars`` long): the same request.

Never the same request: arguments of one shape that differ only in item-like values (another
page, id, direction, product URL: ``values.other_item``), and reworded requests whose own words
show in their answer and not in the other's (another product named and reported).

Members that all make the very same request are never a finding: answered the same, they are
no_progress's evidence; answered anew, the answer moved (a status script polled until done).
Similarity is a guess, so by default it only warns; the stronger evidence (the same call, the
same result) is no_progress's, which escalates.
"""

from __future__ import annotations

import re

from pydantic import Field
from rapidfuzz import fuzz
from rapidfuzz.distance import Indel

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import comparable, failed, has_chars, rounds, skipped, steps_of, window
from gateway.detectors.values import numbers_only, other_item
from gateway.trace.model import ToolEvent, Trace
from gateway.trace.volatile import scrub_random

NAME = "stagnation"
_DIGITS = re.compile(r"\d+")
_TARGET = re.compile(r"[^\s\"'{}\[\],:=]+")  # tokens of canonical arguments: paths, ids, words
_WORD = re.compile(r"[^\W_]{3,}")  # words of a request that may name its item
_ACTION_SCAN = 2048
_ACTION_CHARS = 300


class StagnationSettings(DetectorSettings):
    warn_at: int | None = 3  # the third near-identical answer to a near-identical request
    reject_at: int | None = None  # similarity is a guess; no_progress blocks the exact repeats
    terminate_at: int | None = None
    window: int = Field(default=10, ge=2)
    min_args_similarity: float = Field(default=0.85, gt=0.0, le=1.0)
    min_text_similarity: float = Field(default=0.8, gt=0.0, le=1.0)  # token-set ratio of free text
    # Free text this similar (a freer rewording) with the same action line answering it.
    min_action_similarity: float = Field(default=0.6, gt=0.0, le=1.0)
    min_action_chars: int = Field(default=16, ge=1)  # "Done." is no action to compare
    min_result_similarity: float = Field(default=0.9, gt=0.0, le=1.0)
    min_result_chars: int = Field(default=24, ge=1)  # "OK", "done", "" say nothing to compare
    # Compared from the start of each result: what the tool did and where it left things (a
    # sub-agent's "I scrolled down ... Here is a screenshot of [the page]"); a long tail (the
    # page's text, an OCR dump) differs in detail that says nothing new.
    result_chars: int = Field(default=300, ge=64)
    skip_polling: bool = True


def detect(trace: Trace, settings: StagnationSettings) -> Finding | None:
    events = window(trace, settings.window)
    if not events:
        return None
    latest = events[-1]
    if (
        latest.neutral
        or latest.neutral_guess
        or skipped(latest, settings.exempt_tools, settings.skip_polling)
        or not _usable(latest, settings)
    ):
        return None
    members = [latest]
    for event in reversed(events[:-1]):
        if event.neutral or event.neutral_guess:
            continue
        if event.tool != latest.tool or skipped(event, settings.exempt_tools, settings.skip_polling):
            break
        if not (
            _usable(event, settings)
            and not _other_item(event, latest)
            and (
                (_same_request(event, latest, settings) and _same_answer(event, latest, settings))
                or _same_action(event, latest, settings)
            )
        ):
            break
        members.append(event)
    count = rounds(members)
    if count < 2 or len({e.args_hash for e in members}) == 1:
        # The very same request each time: answered the same, it is no_progress's evidence
        # (its own ladder); answered anew each time, the answer moved (a poll's progress).
        return None
    return Finding(
        NAME,
        count,
        steps_of(members),
        (latest.tool,),
        f"`{latest.tool}` was asked {count} times for nearly the same thing and answered nearly the same each time",
    )


def _usable(event: ToolEvent, settings: StagnationSettings) -> bool:
    """An executed call whose result says something."""
    result = event.result  # there whenever comparable(event) is not None
    return comparable(event) is not None and result is not None and has_chars(result, settings.min_result_chars)


def _same_request(a: ToolEvent, b: ToolEvent, settings: StagnationSettings) -> bool:
    if a.args_hash == b.args_hash:
        return True
    if a.request_text and b.request_text:
        score = fuzz.token_set_ratio(a.request_text, b.request_text, processor=str.lower) / 100
        if score >= settings.min_text_similarity:
            return True
    cutoff = settings.min_args_similarity
    return Indel.normalized_similarity(a.args, b.args, score_cutoff=cutoff) >= cutoff


def _same_answer(a: ToolEvent, b: ToolEvent, settings: StagnationSettings) -> bool:
    if failed(a) != failed(b):
        return False
    if a.result_hash == b.result_hash:
        # Character-similar arguments with an identical answer are similar_repeat's evidence
        # (an edit tool's "updated" after each small edit); reworded free text is ours.
        return a.args_hash == b.args_hash or bool(a.request_text and b.request_text)
    if a.failure_hash is not None and a.failure_hash == b.failure_hash:
        return True  # the same refusal; its echo of each attempt is not "another target"
    if _says_more(a.result or "", b.result or ""):
        return False  # one is the other and more (a read of more lines): something new
    x, y = _text(a, settings), _text(b, settings)
    if x == y:
        return True
    if _DIGITS.sub("#", x) == _DIGITS.sub("#", y):
        return False  # only numbers moved: progress, a page, a clock, a line number
    if _names_difference(a, b, x) or _names_difference(b, a, y):
        return False
    cutoff = settings.min_result_similarity
    return Indel.normalized_similarity(x, y, score_cutoff=cutoff) >= cutoff


def _says_more(x: str, y: str) -> bool:
    """One answer is the other one followed by more (the same file read with a larger limit):
    answers alike in their opening may still differ in what they add."""
    short, long = (x, y) if len(x) <= len(y) else (y, x)
    return len(long) > len(short) + _MORE_CHARS and long.startswith(short.rstrip())


_MORE_CHARS = 16


def _text(event: ToolEvent, settings: StagnationSettings) -> str:
    """The start of the result, lower-case, whitespace collapsed, without the echo of its own
    request text (a search tool that repeats the query answers the same for a reworded one)."""
    text = " ".join(scrub_random((event.result or "")[: settings.result_chars]).lower().split())
    echo = " ".join(event.request_text.lower().split())
    return text.replace(echo, "") if len(echo) >= 8 else text


def _names_difference(a: ToolEvent, b: ToolEvent, result: str) -> bool:
    """``a``'s result mentions an identifier-like token (not only letters) of its arguments that
    ``b``'s arguments lack: the path of another file written, the id of another record. Plain
    words are left out: a reworded request echoed in its answer is still the same request."""
    if a.args_hash == b.args_hash:
        return False
    other = set(_TARGET.findall(b.args.lower()))
    return any(
        len(t) >= 3 and not t.isalpha() and t not in other and t in result for t in _TARGET.findall(a.args.lower())
    )


def _other_item(a: ToolEvent, b: ToolEvent) -> bool:
    """The same request about another thing: values of one shape differing like items (another
    page, id, direction, URL; numbers only), or free text naming an item its answer reports and
    the other answer does not."""
    if other_item(a.args, b.args) or numbers_only(a.args, b.args):
        return True
    if not (a.request_text and b.request_text) or a.request_text == b.request_text:
        return False
    return _names_item(a, b) or _names_item(b, a)


def _names_item(a: ToolEvent, b: ToolEvent) -> bool:
    """Words of ``a``'s request that ``b``'s lacks, reported in ``a``'s answer and not in
    ``b``'s, that look like a name (capitalised past the first word, or with digits: "Bosch
    K5"). Plain words do not count: a rewording's words ("refunds", "plans") show up in a
    transcript worded anew by chance. Trade-off: items named in plain lower-case words with the
    same action line each time look like one request reworded (a warning at most)."""
    theirs = {w.lower() for w in _WORD.findall(b.request_text)}
    own, other = _answer_words(a), _answer_words(b)
    hits = [
        w
        for w in _WORD.findall(a.request_text)[1:]
        if w.lower() not in theirs and w.lower() in own and w.lower() not in other
    ]
    return any(w[0].isupper() or not w.isalpha() for w in hits)


def _answer_words(event: ToolEvent) -> set[str]:
    """The words of a result, an echo of its own request left out (a search tool's "Results
    for <query>" names no item)."""
    return set(_WORD.findall((event.result or "").lower().replace(event.request_text.lower(), "")))


def _same_action(a: ToolEvent, b: ToolEvent, settings: StagnationSettings) -> bool:
    """Freely reworded requests answered by the same action line (see the module's doc)."""
    if not (a.request_text and b.request_text) or failed(a) or failed(b):
        return False
    line = action_line(a.result or "")
    if len(line) < settings.min_action_chars or line != action_line(b.result or ""):
        return False
    score = fuzz.token_set_ratio(a.request_text, b.request_text, processor=str.lower) / 100
    return score >= settings.min_action_similarity


def action_line(result: str) -> str:
    """What a sub-agent reports having done: the first non-empty line of its answer,
    lower-case, whitespace collapsed, volatile digits folded."""
    for line in result[:_ACTION_SCAN].splitlines():
        if line.strip():
            return _DIGITS.sub("#", " ".join(line.lower().split()))[:_ACTION_CHARS]
    return ""
