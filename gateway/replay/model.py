"""What a replay finds in one conversation: its tool calls as timeline rows, and the actions the
policy would have taken, at the step where each would fire."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.savings import Savings  # the messages after the point where the run would have stopped

ACTIONS = ("warn", "reject", "terminate")


@dataclass(frozen=True, slots=True)
class Mark:
    action: str  # warn | reject | terminate
    detector: str
    phase: str  # "request": judged in the executed history; "response": the proposed call
    count: int
    description: str


@dataclass(slots=True)
class Row:
    """One tool call of the conversation."""

    step: int  # 1-based, over the whole run
    message: int  # run-wide index of the assistant message that issued it
    tool: str
    args: str  # the first ``KEPT`` characters: what a report shows
    result: str | None
    repeat: int  # calls so far in this run with the same tool and canonical arguments (1 = first)
    marks: list[Mark] = field(default_factory=list)
    dropped: bool = False  # withheld with the rest of a round whose earlier call was refused
    key: str = ""  # the tool and the hash of its canonical arguments: equal for the same call
    failed: bool = False  # its result reads as an error


KEPT = 300  # characters of a call's arguments and result a row keeps (thousands of runs in memory)


@dataclass(slots=True)
class Result:
    name: str  # the run's path (relative to the argument it was found under), as labels name it
    model: str | None
    messages: int
    requests: int  # recorded bodies merged into this run
    rows: list[Row]
    # action -> (step, detector) of its first firing, over all detectors
    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    # detector -> action -> first step
    by_detector: dict[str, dict[str, int]] = field(default_factory=dict)
    cut: int | None = None  # run-wide message index from which nothing would have happened
    cut_step: int | None = None
    savings: Savings | None = None
    id: str = ""  # the session id the log records
    format: str = ""
    agent: str = ""  # the agent the log names, else the profile the run was read with, else its format
    profile: str = ""  # the agent profile its requests were read with ("": the generic reading)
    label: str | None = None  # loop | healthy | borderline, from the labels or the log
    loop_at: int | None = None  # 0-based tool-call index where the loop began (labelled)

    @property
    def affected(self) -> bool:
        return bool(self.first)

    @property
    def detectors(self) -> list[str]:
        """Detectors of the first warn / reject / terminate, in that order, once each."""
        out: list[str] = []
        for action in ACTIONS:
            if action in self.first and self.first[action][1] not in out:
                out.append(self.first[action][1])
        return out

    @property
    def first_warn(self) -> int | None:
        """0-based index of the call at which the model would first have heard from the gateway
        (a warning, or a stronger action without one before it); None: never."""
        steps = [step for step, _ in self.first.values()]
        return min(steps) - 1 if steps else None

    @property
    def first_stop(self) -> int | None:
        """0-based index of the first call the gateway would have refused (vetoed or ended the
        run at): where the recording stops being what would have happened; None: never."""
        return self.cut_step - 1 if self.cut_step is not None else None

    def actions(self) -> list[dict[str, object]]:
        """Every action where it first fired, in call order."""
        return [
            {"call": row.step - 1, "action": m.action, "detector": m.detector, "phase": m.phase, "count": m.count}
            for row in self.rows
            for m in row.marks
        ]
