"""The first pass: pairing continued over new turns equals pairing from scratch, and a
continued pass never changes the one it continued (two requests may continue it at once)."""

import pytest

from gateway.trace.model import ToolCall, Turn
from gateway.trace.pairing import pair


def call(index, *ids, name="run"):
    return Turn(index, "assistant", tool_calls=tuple(ToolCall(i, name, "{}") for i in ids))


def result(index, call_id, name=None):
    return Turn(index, "tool", text="out", tool_call_id=call_id, name=name)


def user(index, text="go"):
    return Turn(index, "user", text=text)


def shape(pairing):
    return (
        [(c.call.id, c.round, c.user_turn) for c in pairing.calls],
        {p: t.index for p, t in pairing.results.items()},
        pairing.rounds,
        pairing.users,
    )


CASES = {
    "one call per round": [user(0), call(1, "a"), result(2, "a"), call(3, "b"), result(4, "b")],
    "result arrives a request later": [user(0), call(1, "a"), call(2, "b"), result(3, "a")],
    "ids reused every round": [call(0, "call_0"), result(1, "call_0"), call(2, "call_0"), result(3, "call_0")],
    "parallel calls answered out of order": [call(0, "a", "b", "c"), result(1, "c"), result(2, "a"), result(3, "b")],
    "legacy results by name": [
        Turn(0, "assistant", tool_calls=(ToolCall("", "x", "{}"), ToolCall("", "y", "{}"))),
        result(1, None, "y"),
        result(2, None, "x"),
    ],
    "a user turn in the middle": [call(0, "a"), result(1, "a"), user(2), call(3, "b"), result(4, "b")],
    "a result for no call": [call(0, "a"), result(1, "zzz"), result(2, "a")],
}


@pytest.mark.parametrize("turns", CASES.values(), ids=CASES.keys())
def test_every_split_continues_to_the_same_pass(turns):
    whole = shape(pair(turns))
    for cut in range(len(turns) + 1):
        head = pair(turns[:cut])
        before = shape(head)
        assert shape(head.extended(turns[cut:])) == whole
        assert shape(head) == before  # the continued pass is left as it was


@pytest.mark.parametrize(
    ("turns", "cut", "changed_from"),
    [
        ([call(0, "a"), call(1, "b")], 1, 1),  # only a new call
        ([call(0, "a"), call(1, "b"), result(2, "a")], 2, 0),  # an old call answered
        ([call(0, "a"), result(1, "a"), call(2, "b"), result(3, "b")], 2, 1),  # new call and its result
        ([call(0, "a")], 1, 1),  # nothing new
    ],
)
def test_changed_from_is_the_first_call_added_or_answered(turns, cut, changed_from):
    assert pair(turns[:cut]).extended(turns[cut:]).changed_from == changed_from
