"""The stream driver, through the smallest protocol that uses it: what a new protocol's filter
gets for free (hold, release, keepalive, rounds, continuation, terminate, final, cut, fail)."""

from __future__ import annotations

from dataclasses import dataclass, field

from gateway.protocols.base import StreamOptions
from gateway.protocols.sse import SSEEvent, data_event
from gateway.protocols.streaming import HOLDING, StreamDriver
from gateway.trace.model import ToolCall


@dataclass(slots=True)
class _Call:
    position: int
    name: str
    events: list[bytes] = field(default_factory=list)
    done: bool = False

    def to_call(self) -> ToolCall:
        return ToolCall(f"id{self.position}", self.name, "{}")


class LineFilter(StreamDriver):
    """A toy wire: ``data: text ...`` goes out at once; ``data: call NAME`` opens a call,
    ``data: args ...`` adds to it, ``data: end`` completes it; ``data: stop`` ends the answer."""

    def _start_round(self) -> None:
        self._open: _Call | None = None
        self._count = 0

    def _on_event(self, event: SSEEvent, out: list[bytes]) -> None:
        word = (event.data or "").split(" ")[0]
        if word == "call":
            self._open = _Call(self._count, event.data.split(" ")[1], [event.raw])
            self._count += 1
            self._held.hold(self._open)
        elif word in ("args", "end") and self._open is not None:
            self._open.events.append(event.raw)
            if word == "end":
                self._settle(self._open)
        elif word == "stop":
            self._close_held(out)
            if self.round.all_dropped:
                self.round.finish_withheld = True
            else:
                out.append(event.raw)
        else:
            out.append(event.raw)

    def _settle(self, call: _Call) -> None:
        call.done = True
        self._open = None
        self.round.settle([call], self._judge, 0)

    def _release(self, out: list[bytes]) -> None:
        while self._held and self._held[0].done:
            call = self._held.popleft()
            if call.position in self.round.out_index:
                out += call.events

    def _close_held(self, out: list[bytes]) -> None:
        if self._open is not None:
            self._settle(self._open)
        self._release(out)

    def _end_with(self, text: str, model: str | None) -> list[bytes]:
        return [data_event(f"text {text}"), data_event("stop")]

    def _owed(self, out: list[bytes], undecided: bool) -> None:
        if undecided:
            out.append(data_event("stop"))

    def _cut(self, upstream: bytes) -> list[bytes]:
        return [data_event("text (cut)")] if upstream else []

    def _failed(self, error: object) -> list[bytes]:
        return [data_event(f"error {error}")]


QUIET = StreamOptions(keepalive_s=None)


def ev(text: str) -> bytes:
    return data_event(text)


def test_text_goes_out_at_once_and_a_call_when_judged():
    filt = LineFilter(lambda call, position: True, QUIET)
    assert filt.feed(ev("text hi")) == [ev("text hi")]
    assert filt.feed(ev("call read") + ev("args a")) == []
    assert filt.feed(ev("end")) == [ev("call read"), ev("args a"), ev("end")]
    assert filt.feed(ev("stop")) == [ev("stop")]
    assert filt.end_upstream() == [] and filt.final() == []
    assert [c.name for c in filt.round.kept] == ["read"] and not filt.needs_decision


def test_a_refused_round_waits_for_a_decision_and_a_reask_continues_the_stream():
    answers = iter([False, True])
    filt = LineFilter(lambda call, position: next(answers), QUIET)
    assert filt.feed(ev("call read") + ev("end") + ev("stop")) == []
    filt.end_upstream()
    assert filt.needs_decision and filt.round.rejected.name == "read"
    filt.begin_continuation()
    assert len(filt.rounds) == 2 and not filt.needs_decision
    assert filt.feed(ev("call list") + ev("end") + ev("stop")) == [ev("call list"), ev("end"), ev("stop")]
    assert filt.final() == []


def test_terminate_ends_the_stream_once_and_drops_what_is_held():
    filt = LineFilter(lambda call, position: True, QUIET)
    filt.feed(ev("call read"))
    assert filt.terminate("bye") == [ev("text bye"), ev("stop")]
    assert filt.terminate("again") == [] and filt.feed(ev("end")) == []
    assert filt.final() == [] and not filt.needs_decision


def test_nobody_deciding_still_ends_the_stream_well_formed():
    filt = LineFilter(lambda call, position: False, QUIET)
    filt.feed(ev("call read") + ev("end") + ev("stop"))
    assert filt.final() == [ev("stop")] and filt.final() == []


def test_a_quiet_read_while_something_is_held_gets_a_keepalive():
    filt = LineFilter(lambda call, position: True, StreamOptions(keepalive_s=0.0))
    assert filt.feed(ev("call read")) == [HOLDING]
    assert filt.feed(ev("text meanwhile")) == [ev("text meanwhile")]  # bytes went out: no keepalive


def test_cut_drops_a_partial_event_and_fail_adds_the_protocol_terminal_events():
    filt = LineFilter(lambda call, position: True, QUIET)
    filt.feed(ev("text a") + b"data: tex")
    assert filt.fail(ev("text a"), "timeout") == [ev("text (cut)"), ev("error timeout")]
    assert filt.end_upstream() == []  # the partial event is gone with the decoder


def test_holds_whole_is_part_of_the_contract():
    assert LineFilter.holds_whole is False
