"""The trace builder's first pass: pair each tool call with the turn that answered it.

Cheap per turn, but it walks the whole conversation, and every request repeats the whole
conversation. So a pass can be continued: ``Pairing.extended`` copies the state (C-level copies
of one list and two dicts, never the turns) and reads only the new turns. The state is never
changed once a pass is done, so a pass kept for one request stays valid for the next one, and
two requests of one conversation in flight at once each continue it on their own copy.

Rules: a result pairs with the nearest earlier unanswered call carrying its id (ids reused by
some providers, e.g. "call_0" every round, still pair correctly); a result without an id
(legacy ``role: function``) pairs with the latest round's first unanswered call of its name,
else its first unanswered call. Results that match no call are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.trace.model import OWN_TEXT_MARKER, ToolCall, Turn


@dataclass(frozen=True, slots=True)
class Issued:
    """A call found by the pass: its round, the message that issued it, its user turn."""

    call: ToolCall
    round: int
    message_index: int
    user_turn: int


class Pairing:
    """Calls in issue order (``calls``) and the result turn of each answered one (``results``,
    by position in ``calls``), with the number of rounds and of genuine user messages read."""

    __slots__ = ("_by_id", "_last_round", "calls", "changed_from", "results", "rounds", "users")

    def __init__(self, users: int = 0) -> None:
        self.calls: list[Issued] = []
        self.results: dict[int, Turn] = {}
        self.rounds = 0
        self.users = users
        self.changed_from = 0  # the first call the last extension added or answered
        self._by_id: dict[str, tuple[int, ...]] = {}  # call id -> positions of its calls, oldest first
        self._last_round: tuple[int, ...] = ()

    def extended(self, turns: Iterable[Turn]) -> Pairing:
        """A new pass: this one continued over ``turns``; this one is left as it was."""
        new = Pairing.__new__(Pairing)
        new.calls, new.results, new._by_id = list(self.calls), dict(self.results), dict(self._by_id)
        new.rounds, new.users, new._last_round = self.rounds, self.users, self._last_round
        new.changed_from = len(self.calls)
        new._read(turns)
        return new

    def _read(self, turns: Iterable[Turn]) -> None:
        for turn in turns:
            role = turn.role
            if role == "tool":
                position = self._match(turn)
                if position is not None:
                    self.results[position] = turn
                    if position < self.changed_from:
                        self.changed_from = position
            elif role == "assistant" and turn.tool_calls:
                self._issue(turn)
            elif role == "user":
                self.users += is_genuine_user(turn)

    def _issue(self, turn: Turn) -> None:
        self.rounds += 1
        first = len(self.calls)
        calls = turn.tool_calls
        if len(calls) == 1:  # most rounds: one call, no id shared within the round
            call = calls[0]
            self.calls.append(Issued(call, self.rounds, turn.index, self.users))
            self._last_round = (first,)
            if call.id:
                self._by_id[call.id] = (first,)
            return
        self.calls.extend(Issued(call, self.rounds, turn.index, self.users) for call in calls)
        self._last_round = tuple(range(first, len(self.calls)))
        # A new call with a reused id supersedes an older unanswered one: the next result with
        # that id is nearer to the new call. Calls of one round sharing an id pair in order.
        fresh: set[str] = set()
        for position, call in enumerate(turn.tool_calls, first):
            if not call.id:
                continue
            if call.id in fresh:
                self._by_id[call.id] += (position,)
            else:
                fresh.add(call.id)
                self._by_id[call.id] = (position,)

    def _match(self, turn: Turn) -> int | None:
        results, calls = self.results, self.calls
        if turn.tool_call_id:
            queue = self._by_id.get(turn.tool_call_id, ())
            for k, position in enumerate(queue):
                if position not in results:  # answered calls left here were paired by order
                    self._by_id[turn.tool_call_id] = queue[k + 1 :]
                    return position
            if queue:
                self._by_id[turn.tool_call_id] = ()
            if any(calls[p].call.id for p in self._last_round):
                return None  # an id we never issued: a result without a call
        unanswered = [p for p in self._last_round if p not in results]
        named = [p for p in unanswered if turn.name and calls[p].call.name == turn.name]
        candidates = named or unanswered
        return candidates[0] if candidates else None


def pair(turns: Iterable[Turn], users: int = 0) -> Pairing:
    """The pass over ``turns``, ``users`` genuine user messages having come before them."""
    return Pairing(users).extended(turns)


def is_genuine_user(turn: Turn) -> bool:
    """A user prompt, not one of our own notes (a re-ask, or a warning placed as a user message:
    they start with the marker, in any case)."""
    return turn.role == "user" and turn.text.lstrip()[:10].lower() != OWN_TEXT_MARKER
