"""Compaction tracking: a session's history that gets shorter instead of growing."""

import json

from hypothesis import given
from hypothesis import strategies as st

from gateway.guard.compaction import shown_index, track
from gateway.protocols.chat import rewrite
from gateway.protocols.chat.parse import conversation_from_body
from gateway.state import EMPTY, HistoryMark, SessionState, VetoRecord


def history(*steps: str, system: str = "sys", task: str = "task") -> list[dict]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    for n, result in enumerate(steps):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"c{n}", "content": result}]
    return messages


def follow(state: SessionState, messages: list[dict]):
    turns = conversation_from_body({"messages": messages}).turns
    return track(state, turns, len(messages))


def test_the_first_request_only_sets_a_mark():
    tracked = follow(EMPTY, history("a"))
    assert tracked.compacted_at is None and not tracked.compacted_now
    assert tracked.mark.length == 4 and tracked.mark.compacted_len is None


def test_a_growing_history_is_no_compaction():
    first = follow(EMPTY, history("a"))
    second = follow(SessionState(mark=first.mark), history("a", "b"))
    assert second.compacted_at is None and second.mark.length == 6


def test_a_shorter_history_is_a_compaction_and_later_requests_keep_the_marker():
    long = follow(EMPTY, history("a", "b", "c"))
    compacted = [*history()[:2], {"role": "user", "content": "Summary: read a, b, c. Continue."}]
    now = follow(SessionState(mark=long.mark), compacted)
    assert now.compacted_now and now.compacted_at == 3
    assert now.mark.compacted_len == 3 and now.mark.compacted_hash == now.mark.digest
    call = {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    later = [*compacted, {"role": "assistant", "content": None, "tool_calls": [call]},
             {"role": "tool", "tool_call_id": "c9", "content": "c"}]
    after = follow(SessionState(mark=now.mark), later)
    assert after.compacted_at == 3 and not after.compacted_now
    assert after.mark.compacted_len == 3 and after.mark.length == 5


def test_a_rewritten_history_that_did_not_shrink_starts_afresh():
    compacted = follow(EMPTY, history("a"))
    marked = HistoryMark(compacted.mark.length, compacted.mark.digest, 2, compacted.mark.digest)
    other = follow(SessionState(mark=marked), history("x", "y"))  # longer, different prefix
    assert other.compacted_at is None and other.mark.compacted_len is None


def test_a_marker_whose_prefix_is_gone_is_dropped():
    base = follow(EMPTY, history("a", "b"))
    stale = HistoryMark(base.mark.length, base.mark.digest, 2, "not-this-prefix")
    grown = follow(SessionState(mark=stale), history("a", "b", "c"))
    assert grown.compacted_at is None and grown.mark.compacted_len is None


def test_vetoed_exchanges_before_the_compaction_point_shift_it():
    messages = history("a", "b")
    turns = conversation_from_body({"messages": messages}).turns
    hashes = rewrite.prefix_hashes(turns, len(messages))
    exchange = ({"role": "assistant"}, {"role": "tool"})
    before, after, stale = VetoRecord(2, hashes[2], exchange), VetoRecord(4, hashes[4], exchange), \
        VetoRecord(3, "gone", exchange)
    assert shown_index(4, hashes, [before, after, stale]) == 6
    assert shown_index(2, hashes, [before, after]) == 2  # anchored at it: shown after it


messages_strategy = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["system", "user", "assistant", "tool"]),
                           "content": st.text(max_size=8)}), max_size=12)


@given(messages_strategy, st.lists(st.integers(-2, 14), max_size=5))
def test_prefix_hashes_at_equals_prefix_hashes(messages, positions):
    turns = conversation_from_body({"messages": messages}).turns
    full = rewrite.prefix_hashes(turns, len(messages))
    sparse = rewrite.prefix_hashes_at(turns, len(messages), positions)
    assert sparse == {p: full[p] for p in positions if 0 <= p <= len(messages)}


def test_prefix_hashes_at_with_tool_calls_and_gaps():
    messages = [*history("a", "b"), "not a message", {"role": "tool", "content": [{"type": "text", "text": "x"}]}]
    turns = conversation_from_body({"messages": json.loads(json.dumps(messages))}).turns
    full = rewrite.prefix_hashes(turns, len(messages))
    assert rewrite.prefix_hashes_at(turns, len(messages), range(len(messages) + 1)) == dict(enumerate(full))
