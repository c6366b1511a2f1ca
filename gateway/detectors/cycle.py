"""cycle: the latest calls repeat a short sequence, A-B-A-B or longer periods.

WeClaw's oscillation (A-B-A-B on tool names, e.g. write a.py / run a.py) and OpenClaw's
pingPong (warn 10, critical 20 only when the results are stable). Count = the length of the
trailing periodic run, in calls (A-B-A-B = 4), for the shortest period in ``periods`` whose run
covers at least two full periods; a run of one repeated call is exact_repeat's business.

Comparing names alone flags every healthy edit/run-tests cycle, so by default calls are compared
with their arguments and the results must be stable too (``stable_results: require``): a cycle
whose results keep changing is iteration, not a loop.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

from pydantic import Field, field_validator

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import comparable, skipped, window
from gateway.trace.model import ToolEvent, Trace

NAME = "cycle"


class CycleSettings(DetectorSettings):
    warn_at: int | None = 6  # three rounds of A-B, two of A-B-C; real loops need >= 2 periods
    reject_at: int | None = None  # no_progress already escalates each repeated call of the cycle
    terminate_at: int | None = None
    exempt_tools: frozenset[str] = frozenset({"check_background_tasks"})  # sleep/poll cycles
    window: int = Field(default=20, ge=4)  # room for OpenClaw's 20
    periods: tuple[int, ...] = (2, 3, 4)  # periods up to 4 calls
    key: Literal["name", "args"] = "args"  # name: tool names only, as WeClaw
    # require: unstable results -> no finding; cap: unstable results keep the count below
    # reject_at (below terminate_at when reject is off), OpenClaw pingPong; ignore: WeClaw.
    stable_results: Literal["require", "cap", "ignore"] = "require"
    skip_polling: bool = True  # sleep + check-status cycles wait by design

    @field_validator("periods")
    @classmethod
    def _periods(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value or any(p < 2 or p > 8 for p in value):
            raise ValueError("periods must be between 2 and 8")
        return tuple(sorted(set(value)))


def detect(trace: Trace, settings: CycleSettings) -> Finding | None:
    # Neutral calls (think/plan/log) between the calls of a cycle do not break it.
    # No cycle returns to a call (or tool) that occurs nowhere earlier: most calls of a healthy run.
    if not trace.repeats(settings.window, tool_only=settings.key == "name"):
        return None
    recent = window(trace, settings.window)
    events = [e for e in recent if not (e.neutral or e.neutral_guess)]
    if not events or skipped(events[-1], settings.exempt_tools, settings.skip_polling):
        return None
    if trace.latest is not events[-1]:
        return None  # the latest call is neutral: it continues nothing
    keys = [_key(e, settings.key) for e in events]
    for period in settings.periods:
        length = _run(keys, period)
        if length >= 2 * period and len(set(keys[-period:])) > 1:
            return _finding(events[-length:], period, settings)
    return None


def _key(event: ToolEvent, mode: str) -> Hashable:
    return event.tool if mode == "name" else (event.tool, event.args_hash)


def _run(keys: Sequence[Hashable], period: int) -> int:
    """Length of the trailing run in which every key equals the one ``period`` before it."""
    i = len(keys) - 1
    while i - period >= 0 and keys[i] == keys[i - period]:
        i -= 1
    return len(keys) - 1 - i + period if len(keys) >= period else 0


def _finding(run: Sequence[ToolEvent], period: int, settings: CycleSettings) -> Finding | None:
    if any(skipped(e, settings.exempt_tools, settings.skip_polling) for e in run):
        return None
    count = len(run)
    if settings.stable_results != "ignore" and not _stable(run, period):
        if settings.stable_results == "require":
            return None
        count = min(count, _cap(settings, count))
    tools = tuple(e.tool for e in run[-period:])
    return Finding(
        NAME,
        count,
        tuple(e.step for e in run),
        tools,
        f"the last {len(run)} calls repeat a cycle of {period} ({' -> '.join(tools)})",
    )


def _stable(run: Sequence[ToolEvent], period: int) -> bool:
    """Each call returned what it returned one period earlier, and every position of the cycle
    has shown it at least once: a proposed call's result is unknown, so a position seen only
    through proposed or vetoed calls proves nothing yet (a debugger's `p total` inside a loop of
    `next`s is stable only until it prints a new total)."""
    proven = set()
    for i in range(period, len(run)):
        a, b = comparable(run[i]), comparable(run[i - period])
        if a is None or b is None:
            continue
        if a != b:
            return False
        proven.add(i % period)
    return len(proven) == period


def _cap(settings: CycleSettings, count: int) -> int:
    """Unstable results may warn but never reach reject (or terminate when reject is off)."""
    ceiling = settings.reject_at if settings.reject_at is not None else settings.terminate_at
    return count if ceiling is None else ceiling - 1
