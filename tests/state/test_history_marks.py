"""Compaction tracking: a session's history that gets shorter instead of growing."""

import json

from hypothesis import given
from hypothesis import strategies as st

from gateway.guard import prefix
from gateway.guard.compaction_watch import shown_index, track
from gateway.protocols.chat.parse import conversation_from_body
from gateway.state import EMPTY, HistoryMark, SessionState, VetoRecord


def history(*steps: str, system: str = "sys", task: str = "task") -> list[dict]:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": task}]
    for n, result in enumerate(steps):
        call = {"id": f"c{n}", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": result},
        ]
    return messages


def mark_of(messages: list[dict]) -> HistoryMark:
    turns = conversation_from_body({"messages": messages}).turns
    return HistoryMark(len(messages), prefix.prefix_hashes(turns, len(messages))[-1])


def follow(state: SessionState, messages: list[dict]):
    turns = conversation_from_body({"messages": messages}).turns
    mark = mark_of(messages)
    return track(state, turns, mark.length, mark.digest)


class Session:
    """What the request path does with a store: swap the mark, then keep the marker."""

    def __init__(self) -> None:
        self.state = EMPTY

    def request(self, messages: list[dict]):
        tracked = follow(self.state, messages)
        self.state = SessionState(mark=mark_of(messages), compacted=tracked.marker)
        return tracked


def test_the_first_request_has_nothing_to_compare_with():
    tracked = follow(EMPTY, history("a"))
    assert tracked.compacted_at is None and not tracked.compacted_now and not tracked.marker_changed


def test_a_growing_history_is_no_compaction():
    session = Session()
    session.request(history("a"))
    grown = session.request(history("a", "b"))
    assert grown.compacted_at is None and not grown.marker_changed


def test_a_shorter_history_is_a_compaction_and_later_requests_keep_the_marker():
    session = Session()
    session.request(history("a", "b", "c"))
    compacted = [*history()[:2], {"role": "user", "content": "Summary: read a, b, c. Continue."}]
    now = session.request(compacted)
    assert now.compacted_now and now.compacted_at == 3
    assert now.marker == mark_of(compacted) and now.marker_changed
    call = {"id": "c9", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}
    later = [
        *compacted,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c9", "content": "c"},
    ]
    after = session.request(later)
    assert after.compacted_at == 3 and not after.compacted_now and not after.marker_changed
    assert session.request([*later, {"role": "user", "content": "next"}]).compacted_at == 3


def test_a_rewritten_history_that_did_not_shrink_clears_the_marker():
    session = Session()
    session.request(history("a", "b"))
    session.request(history("a"))  # compacted
    cleared = session.request(history("x", "y"))  # longer, but not an extension of it
    assert cleared.compacted_at is None and cleared.marker is None and cleared.marker_changed


def test_without_vetoes_or_a_marker_only_the_request_digest_is_hashed():
    session = Session()
    session.request(history("a", "b"))
    tracked = session.request(history("a", "b", "c"))
    assert dict(tracked.hashes) == {8: mark_of(history("a", "b", "c")).digest}


def test_vetoed_exchanges_before_the_compaction_point_shift_it():
    messages = history("a", "b")
    turns = conversation_from_body({"messages": messages}).turns
    hashes = prefix.prefix_hashes(turns, len(messages))
    exchange = ({"role": "assistant"}, {"role": "tool"})
    before, after, stale = (
        VetoRecord(2, hashes[2], exchange),
        VetoRecord(4, hashes[4], exchange),
        VetoRecord(3, "gone", exchange),
    )
    assert shown_index(4, hashes, [before, after, stale]) == 6
    assert shown_index(2, hashes, [before, after]) == 2  # anchored at it: shown after it


messages_strategy = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.text(max_size=8)}
    ),
    max_size=12,
)


@given(messages_strategy, st.lists(st.integers(-2, 14), max_size=5))
def test_prefix_hashes_at_equals_prefix_hashes(messages, positions):
    turns = conversation_from_body({"messages": messages}).turns
    full = prefix.prefix_hashes(turns, len(messages))
    sparse = prefix.prefix_hashes_at(turns, len(messages), positions)
    assert sparse == {p: full[p] for p in positions if 0 <= p <= len(messages)}


def test_prefix_hashes_at_with_tool_calls_and_gaps():
    messages = [*history("a", "b"), "not a message", {"role": "tool", "content": [{"type": "text", "text": "x"}]}]
    turns = conversation_from_body({"messages": json.loads(json.dumps(messages))}).turns
    full = prefix.prefix_hashes(turns, len(messages))
    assert prefix.prefix_hashes_at(turns, len(messages), range(len(messages) + 1)) == dict(enumerate(full))


# --- positive evidence: a new run of the same task is never a compaction ---------------------


def fingerprinted(messages: list[dict], state: SessionState):
    turns = conversation_from_body({"messages": messages}).turns
    mark = mark_of(messages)
    return track(state, turns, mark.length, mark.digest, explicit=False)


def after_a_long_run() -> SessionState:
    return SessionState(mark=mark_of(history("a", "b", "c", "d")))


def test_a_new_run_of_the_same_task_starts_afresh_with_or_without_a_session_id():
    new_run = history()  # the same system prompt and task: a batch job, an eval, a cron agent
    for explicit in (False, True):
        turns = conversation_from_body({"messages": new_run}).turns
        mark = mark_of(new_run)
        tracked = track(after_a_long_run(), turns, mark.length, mark.digest, explicit=explicit)
        assert tracked.compacted_at is None and not tracked.compacted_now and tracked.marker is None


def test_a_new_run_clears_a_marker_left_by_the_previous_run():
    state = SessionState(mark=mark_of(history("a", "b", "c")), compacted=mark_of(history("a")))
    tracked = fingerprinted(history(), state)
    assert tracked.compacted_at is None and tracked.marker is None and tracked.marker_changed


def test_a_summary_message_is_evidence_of_a_compaction_without_a_session_id():
    for summary in (
        "Summary of the work so far: read a, b, c. Continue.",
        "This session is being continued from a previous conversation that ran out of context.",
        "[context compacted] earlier turns were removed",
    ):
        compacted = [*history(), {"role": "user", "content": summary}]
        tracked = fingerprinted(compacted, after_a_long_run())
        assert tracked.compacted_now and tracked.compacted_at == 3, summary


def test_a_task_that_mentions_a_summary_is_not_evidence():
    # The opening (system prompt, first user message) is what a new run repeats.
    new_run = history(system="You write summaries.", task="Summarize the previous conversation log.")
    state = SessionState(
        mark=mark_of(
            history("a", "b", "c", system="You write summaries.", task="Summarize the previous conversation log.")
        )
    )
    assert fingerprinted(new_run, state).compacted_at is None


def test_a_truncated_history_is_a_compaction_only_with_an_explicit_session():
    truncated = [*history()[:2], *history("c", "d")[2:]]  # the middle dropped, the work carried over
    assert fingerprinted(truncated, after_a_long_run()).compacted_at is None
    turns = conversation_from_body({"messages": truncated}).turns
    mark = mark_of(truncated)
    assert track(after_a_long_run(), turns, mark.length, mark.digest, explicit=True).compacted_now


def test_only_a_shorter_history_without_evidence_starts_a_new_run():
    """``Tracked.continues``: False ends a fingerprint session's vetoes (``gateway.guard.planner``)."""
    assert follow(EMPTY, history("a")).continues  # nothing to compare with
    assert fingerprinted(history("a", "b", "c", "d", "e"), after_a_long_run()).continues  # grew
    assert not fingerprinted(history(), after_a_long_run()).continues  # the same task, from the start
    assert not fingerprinted(history("a"), after_a_long_run()).continues  # the same prefix, shorter
    summary = [*history("a"), {"role": "user", "content": "Summary of the work so far: read a. Continue."}]
    assert fingerprinted(summary, after_a_long_run()).continues  # compacted: the same run
    assert fingerprinted(history("x", "y", "z", "w"), after_a_long_run()).continues  # rewritten, not shorter
