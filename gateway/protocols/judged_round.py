"""One round of proposed tool calls (one upstream stream), judged in order: every protocol's.

The first rejected call aborts the rest of the round, so the calls that reach the agent
are always a prefix of what the model proposed. A stream filter hands over its calls as it
completes them, in whatever shape it assembles them (``Proposed``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from gateway.protocols.base import Judge
from gateway.trace.model import ToolCall

__all__ = ["Proposed", "RoundState"]


class Proposed(Protocol):
    """A completed call as a filter assembled it."""

    @property
    def position(self) -> int: ...  # its order in the round, from 0

    def to_call(self) -> ToolCall: ...


@dataclass(slots=True)
class RoundState:
    """The tool calls of one upstream stream (chat: choice 0's), as judged."""

    kept: list[ToolCall] = field(default_factory=list)
    dropped: list[ToolCall] = field(default_factory=list)  # the rejected call and all after it
    rejected: ToolCall | None = None
    rejected_position: int | None = None
    finish_reason: str | None = None  # as the upstream sent it
    finish_withheld: bool = False
    ended: bool = False  # the upstream stream is over
    interleaved: bool = False  # a call got deltas after it was judged: judged on partial args
    judge_errors: list[Exception] = field(default_factory=list)  # judge raised: call kept
    out_index: dict[int, int] = field(default_factory=dict)  # kept call position -> client index

    @property
    def all_dropped(self) -> bool:
        return bool(self.dropped) and not self.kept

    def settle(self, completed: Iterable[Proposed], judge: Judge, next_index: int) -> int:
        """Judge completed calls in order; returns the next free client-side index."""
        for call in completed:
            tool_call = call.to_call()
            if self.rejected is None and self._keep(judge, tool_call, call.position):
                self.out_index[call.position] = next_index
                next_index += 1
                self.kept.append(tool_call)
                continue
            if self.rejected is None:
                self.rejected, self.rejected_position = tool_call, call.position
            self.dropped.append(tool_call)
        return next_index

    def _keep(self, judge: Judge, call: ToolCall, position: int) -> bool:
        try:
            return bool(judge(call, position))
        except Exception as exc:  # fail-open: a broken judge must never break the stream
            self.judge_errors.append(exc)
            return True
