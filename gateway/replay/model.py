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

    step: int  # 1-based, over the whole conversation
    message: int  # index of the assistant message that issued it
    tool: str
    args: str
    result: str | None
    repeat: int  # calls so far in this run with the same tool and canonical arguments (1 = first)
    marks: list[Mark] = field(default_factory=list)
    dropped: bool = False  # withheld with the rest of a round whose earlier call was refused


@dataclass(slots=True)
class Result:
    label: str
    model: str | None
    messages: int
    requests: int  # recorded bodies merged into this conversation
    rows: list[Row]
    # action -> (step, detector) of its first firing, over all detectors
    first: dict[str, tuple[int, str]] = field(default_factory=dict)
    # detector -> action -> first step
    by_detector: dict[str, dict[str, int]] = field(default_factory=dict)
    cut: int | None = None  # messages from this index on would not have happened
    cut_step: int | None = None
    savings: Savings | None = None

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
