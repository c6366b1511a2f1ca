"""The history cache may only save work: every trace equals one built from scratch."""

import random
from unittest.mock import patch

import pytest

from gateway.guard.history import HistoryCache
from gateway.guard.prefix import prefix_hashes_at
from gateway.protocols.anthropic.protocol import KIND as ANTHROPIC_KIND
from gateway.protocols.chat.parse import conversation_from_body
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.protocols.responses.protocol import KIND as RESPONSES_KIND
from gateway.trace.builder import build_trace
from gateway.trace.settings import TraceSettings

RESPONSES = RESPONSES_KIND.build()

ANTHROPIC = ANTHROPIC_KIND.build()

SETTINGS = TraceSettings()
TOOLS = [{"type": "function", "function": {"name": n}} for n in ("read", "run", "grep")]


def grow(messages, rng, step):
    """One agent round: an assistant call (sometimes two) and its results."""
    reused = rng.random() < 0.3  # some providers number ids per round: "call_0" every time
    calls = [
        {
            "id": f"call_{k}" if reused else f"c{step}_{k}",
            "type": "function",
            "function": {"name": rng.choice(["read", "run", "grep"]), "arguments": f'{{"p": {rng.randint(0, 3)}}}'},
        }
        for k in range(rng.choice([1, 1, 2, 3]))
    ]
    messages = [*messages, {"role": "assistant", "content": None, "tool_calls": calls}]
    answered = rng.sample(calls, len(calls))  # results in any order, some never sent
    for call in answered[: len(calls) - (rng.random() < 0.1)]:
        messages.append(
            {"role": "tool", "tool_call_id": call["id"], "content": rng.choice(["same", "Error: x", f"out {step}"])}
        )
    if rng.random() < 0.1:
        messages.append({"role": "user", "content": f"next task {step}"})  # a new run renumbers steps
    return messages


def parse(cache, body, size):
    return cache.parse(CHAT, body, CHAT.requests.items(body), size, SETTINGS)


def fresh(body):
    return build_trace(conversation_from_body(body), SETTINGS)


def check(cache, body):
    parsed = parse(cache, body, 1000)
    assert parsed.conv == conversation_from_body(body)
    assert build_trace(parsed.conv, SETTINGS, parsed.events) == fresh(body)
    n = len(body["messages"])
    assert parsed.digest == prefix_hashes_at(parsed.conv.turns, n, (n,))[n]


@pytest.mark.parametrize("seed", range(8))
def test_incremental_traces_equal_fresh_ones(seed):
    rng = random.Random(seed)
    cache = HistoryCache()
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": f"task {seed}"}]
    for step in range(40):
        messages = grow(messages, rng, step)
        # Each request is a new list of new dicts, as a client re-serializing its history sends.
        body = {"messages": [dict(m) for m in messages], "tools": TOOLS}
        check(cache, body)
        # the request the agent sends right after a call was proposed, before its result
        if step % 7 == 3:
            check(cache, {"messages": [dict(m) for m in messages[:-1]], "tools": TOOLS})
    assert cache.hits >= 30


def test_an_edited_history_is_parsed_from_scratch():
    cache = HistoryCache()
    base = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "first answer"},
    ]
    parse(cache, {"messages": base}, 10)
    edited = [*base[:2], {"role": "assistant", "content": "summary of earlier work"}, {"role": "user", "content": "go"}]
    check(cache, {"messages": edited})
    assert (cache.hits, cache.misses) == (0, 2)


def test_changed_declared_tools_drop_the_event_memo():
    cache = HistoryCache()
    rng = random.Random(1)
    messages = grow([{"role": "user", "content": "go"}], rng, 0)
    parse(cache, {"messages": messages, "tools": TOOLS}, 10)
    memo = parse(cache, {"messages": messages, "tools": TOOLS}, 10).events
    assert memo is not None
    memo["sentinel"] = True
    kept = parse(cache, {"messages": messages, "tools": TOOLS}, 10).events
    dropped = parse(cache, {"messages": messages, "tools": TOOLS[:1]}, 10).events
    assert "sentinel" in kept and "sentinel" not in dropped


@pytest.mark.parametrize(
    ("entries", "max_bytes", "size", "kept"),
    [
        (3, 10_000, 10, 3),  # bounded by entries
        (100, 100, 10, 10),  # bounded by bytes
        (100, 100, 30, 0),  # one history larger than a quarter of the budget is never held
    ],
)
def test_bounded(entries, max_bytes, size, kept):
    cache = HistoryCache(max_entries=entries, max_bytes=max_bytes)
    for i in range(20):
        parse(cache, {"messages": [{"role": "user", "content": f"conversation {i}"}]}, size)
    assert len(cache._entries) == kept


@pytest.mark.parametrize(
    ("adapter", "field", "before", "after"),
    [
        (ANTHROPIC, "system", "You are careful.", [{"type": "text", "text": "You are reckless."}]),
        (RESPONSES, "instructions", "Be brief.", "Be thorough."),
        (ANTHROPIC, "system", None, "A system prompt added later."),
    ],
)
def test_a_changed_system_field_is_a_new_history(adapter, field, before, after):
    """Turns read from outside the items (a system prompt field) belong to the cached history:
    the same items under another system prompt are parsed afresh, never continued."""
    messages = [{"role": "user", "content": "go"}, {"role": "assistant", "content": "ok"}]
    cache = HistoryCache()
    items = (
        [dict(m) for m in messages]
        if adapter is ANTHROPIC
        else [{"role": m["role"], "content": m["content"]} for m in messages]
    )

    def body(value):
        return {
            "messages" if adapter is ANTHROPIC else "input": [dict(i) for i in items],
            **({field: value} if value is not None else {}),
        }

    first = body(before)
    cache.parse(adapter, first, adapter.requests.items(first), 10, SETTINGS)
    second = body(after)
    parsed = cache.parse(adapter, second, adapter.requests.items(second), 10, SETTINGS)
    assert (cache.hits, cache.misses) == (0, 2)
    assert parsed.conv == adapter.requests.conversation(second, adapter.requests.items(second))
    again = body(after)
    assert cache.parse(adapter, again, adapter.requests.items(again), 10, SETTINGS).conv == parsed.conv
    assert cache.hits == 1


def test_a_grown_body_is_found_by_its_first_items_without_hashing_them():
    """A body read as the growth of a remembered one reuses the earlier items' objects: its
    entry is found by their identity; other objects with the same content by the content key."""
    opening = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    cache = HistoryCache()
    parse(cache, {"messages": opening}, 10)
    grown = {"messages": [*opening, {"role": "assistant", "content": "a"}]}
    with patch("gateway.guard.history._key", side_effect=AssertionError("hashed")):
        check(cache, grown)
    copied = {"messages": [dict(m) for m in grown["messages"]] + [{"role": "user", "content": "more"}]}
    check(cache, copied)
    assert (cache.hits, cache.misses) == (2, 1)


@pytest.mark.parametrize(
    "first",
    [
        [{"role": "user", "content": "u"}],  # one item remembered, two now: another key
        [
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": "other"},
        ],  # a second item not the same object
    ],
)
def test_an_identity_that_does_not_cover_the_key_falls_back_to_it(first):
    cache = HistoryCache()
    parse(cache, {"messages": first}, 10)
    later = {"messages": [first[0], {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"}]}
    check(cache, later)
    assert (cache.hits, cache.misses) == (0, 2)
