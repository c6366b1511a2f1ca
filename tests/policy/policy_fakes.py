"""Fakes for the policy tests: a tiny detector registry and trace builder, so the policy engine
is tested on its own contract (Detector, Finding, DetectorSettings) and not on real detectors."""

from __future__ import annotations

import textwrap

from gateway.detectors.base import Detector, DetectorSettings, Finding
from gateway.trace.model import Status, ToolEvent, Trace


class RepeatSettings(DetectorSettings):
    warn_at: int | None = 3
    reject_at: int | None = 4
    terminate_at: int | None = 5
    window: int = 8


class PollSettings(DetectorSettings):
    """Two ladders, like no_progress: generic calls and known polling tools."""

    warn_at: int | None = 10
    reject_at: int | None = 20
    terminate_at: int | None = 30
    poll_tools: frozenset[str] = frozenset({"poll"})
    poll_warn_at: int | None = 2
    poll_reject_at: int | None = None
    poll_terminate_at: int | None = 4
    window: int = 50

    def thresholds_for(self, finding: Finding) -> DetectorSettings:
        if set(finding.tools) <= self.poll_tools:
            return DetectorSettings(
                warn_at=self.poll_warn_at, reject_at=self.poll_reject_at, terminate_at=self.poll_terminate_at
            )
        return self


def _tail(trace: Trace, window: int) -> tuple[ToolEvent, ...]:
    """The latest event and the identical calls right before it, within the window."""
    events = trace.events[-window:]
    last = events[-1]
    same = []
    for event in reversed(events):
        if (event.tool, event.args_hash) != (last.tool, last.args_hash):
            break
        same.append(event)
    return tuple(reversed(same))


def detect_repeat(trace: Trace, settings: RepeatSettings) -> Finding | None:
    same = _tail(trace, settings.window)
    if len(same) < 2:
        return None
    return Finding(
        "repeat",
        len(same),
        tuple(e.step for e in same),
        (same[-1].tool,),
        f"`{same[-1].tool}` called {len(same)} times with the same arguments.",
    )


def detect_poll(trace: Trace, settings: PollSettings) -> Finding | None:
    same = _tail(trace, settings.window)
    if len(same) < 2:
        return None
    return Finding("poll", len(same), tuple(e.step for e in same), (same[-1].tool,), "same result")


def detect_boom(trace: Trace, settings: DetectorSettings) -> Finding | None:
    raise RuntimeError("detector bug")


def detect_always(trace: Trace, settings: DetectorSettings) -> Finding | None:
    return Finding("always", 1, (trace.events[-1].step,), (trace.events[-1].tool,), "always")


REGISTRY = {
    "repeat": Detector("repeat", detect_repeat, RepeatSettings),
    "poll": Detector("poll", detect_poll, PollSettings),
    "always": Detector("always", detect_always, DetectorSettings),
}
BOOM_REGISTRY = {"boom": Detector("boom", detect_boom, DetectorSettings), **REGISTRY}


def make_trace(*calls: str | tuple[str, str]) -> Trace:
    """``make_trace("a", "a", ("b", '{"x":1}'))``: one executed event per call, one per round."""
    events = []
    for i, call in enumerate(calls, start=1):
        tool, args = (call, "{}") if isinstance(call, str) else call
        events.append(
            ToolEvent(
                step=i,
                round=i,
                call_id=f"c{i}",
                tool=tool,
                raw_args=args,
                args=args,
                args_hash=f"{tool}:{args}",
                result="ok",
                result_hash="ok",
                status=Status.OK,
                declared=True,
            )
        )
    return Trace(events=tuple(events), turns=(), run_start=0, rounds=len(events))


def policy_text(body: str) -> str:
    return "version: 1\nname: t\n" + textwrap.dedent(body)
