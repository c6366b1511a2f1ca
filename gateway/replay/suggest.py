"""Which runs a labeller should read first: the ones that look most like loops, whatever the
policy said about them, each with a one-screen excerpt of its calls.

A run is ranked by its strongest sign: the longest streak of identical calls in a row, of failing
calls in a row, or of a short cycle (a period of 2 to 4 calls coming back unchanged). Runs that
are labelled already are read last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gateway.replay.model import Result
from gateway.replay.scores import line

SCREEN = 14  # calls an excerpt shows
PERIODS = (2, 3, 4)


@dataclass(frozen=True, slots=True)
class Sign:
    strength: int  # calls the pattern spans
    start: int  # 0-based index of its first call
    why: str


def sign(result: Result) -> Sign:
    """The run's strongest loop-like pattern (strength 0: none)."""
    keys = [r.key for r in result.rows]
    found = [
        _streak(keys, lambda i: keys[i] == keys[i - 1], 1, "identical calls in a row"),
        _streak(keys, lambda i: result.rows[i].failed and result.rows[i - 1].failed, 1, "failing calls in a row"),
    ]
    for period in PERIODS:
        same = _streak(keys, _cycling(keys, period), period)
        if same.strength >= 2 * period:
            found.append(Sign(same.strength, same.start, f"calls in a {period}-call cycle"))
    return max(found, key=lambda s: s.strength)


def _cycling(keys: list[str], period: int) -> Callable[[int], bool]:
    """Call ``i`` repeats the one ``period`` calls before it, and is not its neighbour's twin."""
    return lambda i: i >= period and keys[i] == keys[i - period] and keys[i] != keys[i - 1]


def _streak(keys: list[str], holds: Callable[[int], bool], back: int, why: str = "") -> Sign:
    best, start, length = Sign(0, 0, why), 0, 0
    for i in range(back, len(keys)):
        if holds(i):
            if length == 0:
                start = i - back
            length += 1
            if length + back > best.strength:
                best = Sign(length + back, start, why)
        else:
            length = 0
    return best


def suggest(results: list[Result], count: int) -> list[tuple[Result, Sign]]:
    signed = [(r, sign(r)) for r in results]
    signed.sort(key=lambda pair: (pair[0].label is not None, -pair[1].strength, -len(pair[0].rows)))
    return [pair for pair in signed[:count] if pair[1].strength > 0 or pair[0].first]


def excerpt(result: Result, found: Sign) -> str:
    """One screen: the run, its sign, what the policy would do, and the calls where it shows."""
    head = f"{result.name}  (id {result.id}, {result.agent}, {len(result.rows)} calls"
    head += f", labelled {result.label})" if result.label else ")"
    said = []
    if found.strength:
        said.append(f"{found.strength} {found.why} from #{found.start}")
    if result.first_warn is not None:
        said.append(f"policy: first action at #{result.first_warn}")
    if result.first_stop is not None:
        said.append(f"stop at #{result.first_stop}")
    begin = max(0, found.start - 2)
    rows = result.rows[begin : begin + SCREEN]
    lines = [head, "  " + "; ".join(said)] + ["    " + line(r) for r in rows]
    if begin + SCREEN < len(result.rows):
        lines.append(f"    ... {len(result.rows) - begin - SCREEN} more calls")
    return "\n".join(lines)
