"""vetoed_call: a call the gateway refused stays refused for the run, whatever came between.

A model whose looping call is vetoed often makes one different call (each time with new
arguments), then goes back to the refused one. Every other detector sees the detour as a new
call: a repeat count that stops at it, or an interleaved read that lowers the evidence to a
warning, lets the refused call through again and the ladder starts over. So the count of a
refused call goes on across any detour: the latest call, when the same call (same tool, same
canonical arguments) was vetoed earlier in the run, is counted with every earlier occurrence of
it in the window (executed, vetoed, and itself). It is refused again (``reject_at``), and the run
ends when the count reaches ``terminate_at``, which a pack sets to the ladder its vetoes come
from (the default policy: 8, as ``no_progress`` and ``error_repeat``).

The evidence is the gateway's own earlier refusal, which a healthy run never earns: the
detector is silent until a veto happened in the run (the vetoed exchange is re-shown to the
model in later requests, from the state store, so every replica sees it).
"""

from __future__ import annotations

from pydantic import Field

from gateway.detectors.base import DetectorSettings, Finding
from gateway.detectors.common import rounds, skipped, steps_of, window
from gateway.trace.model import Trace

NAME = "vetoed_call"


class VetoedCallSettings(DetectorSettings):
    warn_at: int | None = None  # a veto was already shown: there is nothing left to warn about
    reject_at: int | None = 1  # any return to a refused call is refused again
    terminate_at: int | None = 8  # the count the refusing ladder ends at (no_progress, error_repeat)
    window: int = Field(default=64, ge=2)  # the trace's horizon: a run's worth of calls
    skip_polling: bool = False  # a vetoed poll is vetoed too: its own ladder refused it


def detect(trace: Trace, settings: VetoedCallSettings) -> Finding | None:
    if not trace.repeats(settings.window):  # a call refused before and back is a repeat
        return None
    events = window(trace, settings.window)
    latest = events[-1]
    if latest.vetoed or skipped(latest, settings.exempt_tools, settings.skip_polling):
        return None  # a vetoed latest event is the refusal itself, judged when it was proposed
    same = [e for e in events if e.tool == latest.tool and e.args_hash == latest.args_hash]
    if not any(e.vetoed for e in same[:-1]):
        return None
    count = rounds(same)
    return Finding(
        NAME,
        count,
        steps_of(same),
        (latest.tool,),
        f"`{latest.tool}` was refused earlier in this run and was called again with "
        f"the same arguments ({count} times in all)",
    )
