"""Bodies read by what they add to an earlier body: always the payload a whole parse gives."""

from __future__ import annotations

import json
import random

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gateway.protocols.grown import GrownBodies, appended
from gateway.wire import codec

# Longer than the opening conversations are found by, and than the bodies parsed whole anyway.
SYSTEM = {"role": "system", "content": "You are a careful agent. " * 700}


def message(rng: random.Random, i: int) -> dict:
    kind = rng.choice(["assistant", "tool", "user"])
    if kind == "assistant":
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"c{i}", "type": "function", "function": {"name": "read", "arguments": f'{{"p": "f{i}]"}}'}}
            ],
        }
    if kind == "tool":
        return {"role": "tool", "tool_call_id": f"c{i}", "content": f'line ] , {{ }} "q" é {i}\n' * rng.randint(0, 3)}
    return {"role": "user", "content": [{"type": "text", "text": f"go on {i}"}]}


STYLES = {
    "orjson": lambda body: orjson.dumps(body),
    "json.dumps": lambda body: json.dumps(body).encode(),
    "compact ascii": lambda body: json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode(),
    "indented": lambda body: json.dumps(body, indent=2).encode(),
}


def bodies(seed: int, order: str) -> list[dict]:
    rng = random.Random(seed)
    messages = [SYSTEM, {"role": "user", "content": f"task {seed}"}]
    out = []
    for i in range(25):
        for _ in range(rng.choice([0, 1, 2, 3])):
            messages = [*messages, message(rng, i)]
        fields = {
            "model": "gpt-4o",
            "tools": [{"type": "function", "function": {"name": "read"}}],
            "stream": i % 2 == 0,
        }
        out.append(
            {"messages": list(messages), **fields}
            if order == "messages first"
            else {"model": "gpt-4o", "messages": list(messages), **{k: v for k, v in fields.items() if k != "model"}}
        )
    return out


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("order", ["messages first", "model first"])
def test_a_growing_conversation_is_read_as_a_whole_parse_reads_it(style, order):
    cache = GrownBodies()
    for payload in bodies(7, order):
        body = STYLES[style](payload)
        assert cache.loads(body, "messages") == orjson.loads(body)
    assert cache.hits >= 20  # every body after the first continued the one before


def test_read_items_are_new_lists_of_the_earlier_objects():
    cache = GrownBodies()
    first, second = bodies(1, "messages first")[:2]
    one = cache.loads(orjson.dumps(first), "messages")
    two = cache.loads(
        orjson.dumps({**second, "messages": first["messages"] + [{"role": "user", "content": "x"}]}), "messages"
    )
    assert two["messages"] is not one["messages"]
    assert all(a is b for a, b in zip(one["messages"], two["messages"]))


CHANGES = {
    "an earlier message edited": lambda m: [m[0], {**m[1], "content": "another task"}, *m[2:]],
    "history compacted": lambda m: [m[0], {"role": "user", "content": "summary of the work so far"}],
    "last message dropped": lambda m: m[:-1],
}


@pytest.mark.parametrize("change", CHANGES)
def test_a_history_that_did_not_only_grow_is_parsed_whole(change):
    cache = GrownBodies()
    payload = bodies(3, "messages first")[-1]
    cache.loads(orjson.dumps(payload), "messages")
    changed = {**payload, "messages": CHANGES[change](payload["messages"])}
    assert cache.loads(orjson.dumps(changed), "messages") == changed
    assert cache.hits == 0


TAILS = {
    "garbage after the items": b', {"role": "user"}] trailing',
    "an unterminated new item": b', {"role": "user"',
    "a second messages field": b'], "messages": []}',
    "a number beyond a double": b', {"role": "user", "content": 1e400}], "model": "m"}',
    "a lone surrogate": b', {"role": "user", "content": "\\ud83d"}], "model": "m"}',
    "no object end": b"]",
}


@pytest.mark.parametrize("tail", TAILS)
def test_odd_continuations_get_what_a_whole_parse_gives(tail):
    cache = GrownBodies()
    first = orjson.dumps({"messages": [SYSTEM, {"role": "user", "content": "go"}], "model": "m"})
    cache.loads(first, "messages")
    body = first[: first.index(b'], "model"') if b'], "model"' in first else first.rindex(b"]")] + TAILS[tail]
    try:
        expected = codec.loads(body)
    except codec.DecodeError:
        with pytest.raises(codec.DecodeError):
            cache.loads(body, "messages")
        return
    assert cache.loads(body, "messages") == expected


def test_a_nested_field_of_the_same_name_before_the_items_is_not_taken_for_them():
    cache = GrownBodies()
    payload = {"metadata": {"messages": [{"role": "user", "content": "decoy"}]}, "messages": [SYSTEM], "model": "m"}
    for extra in range(3):
        payload = {**payload, "messages": payload["messages"] + [{"role": "user", "content": f"m{extra}"}]}
        body = json.dumps(payload).encode()
        assert cache.loads(body, "messages") == payload
    assert cache.hits == 2


def test_conversations_that_open_alike_are_told_apart():
    cache = GrownBodies()
    runs = [[SYSTEM, {"role": "user", "content": f"task {n}"}] for n in range(5)]
    for step in range(4):
        for n, run in enumerate(runs):
            run.append({"role": "assistant", "content": f"step {step} of {n}"})
            body = orjson.dumps({"messages": run, "model": "m"})
            assert cache.loads(body, "messages") == orjson.loads(body)
    assert cache.hits == 15


def test_a_fleet_of_agents_sharing_a_long_opening_is_read_by_what_each_adds():
    """More agents than any one look-up compares, all opening with the same system prompt:
    each body is found by the windows where its own history differs, once its history reaches
    one beyond the shared opening (a shorter body costs little to parse whole)."""
    cache = GrownBodies()
    runs = [[SYSTEM, {"role": "user", "content": f"task {n}"}] for n in range(100)]
    hits = []
    for step in range(4):
        for n, run in enumerate(runs):
            run.append({"role": "tool", "tool_call_id": f"c{step}", "content": f"{n}:{step} " * (2000 + 37 * n)})
            body = orjson.dumps({"messages": run, "model": "m"})
            assert cache.loads(body, "messages") == orjson.loads(body)
        hits.append(cache.hits)
    assert hits[1] >= 90 and hits[3] - hits[1] == 200


def test_small_bodies_are_parsed_whole_and_not_kept():
    cache = GrownBodies()
    for n in range(3):
        body = orjson.dumps({"messages": [{"role": "user", "content": "x" * n}], "model": "m"})
        assert cache.loads(body, "messages") == orjson.loads(body)
    assert (cache.hits, len(cache)) == (0, 0)


@pytest.mark.parametrize(("entries", "max_bytes", "kept"), [(3, 10**9, 3), (100, 80_000, 4)])
def test_bounded(entries, max_bytes, kept):
    cache = GrownBodies(max_entries=entries, max_bytes=max_bytes)
    for n in range(6):
        body = orjson.dumps({"messages": [{"role": "user", "content": f"{n} " + "x" * 17_000}], "model": "m"})
        cache.loads(body, "messages")
    assert len(cache) == kept and cache._bytes <= max_bytes


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('ab]["{},:\\é\n '), max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["role", "content", "messages", "x"]), inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.lists(json_values, max_size=3), min_size=1, max_size=6),
    st.dictionaries(st.sampled_from(["model", "x", "tools"]), json_values, max_size=3),
    st.sampled_from(list(STYLES)),
)
def test_any_growth_of_any_items(steps, fields, style):
    cache = GrownBodies()
    items: list = [{"role": "system", "content": "s" * 17_000}]
    for added in steps:
        items = items + added
        payload = {"messages": items, **fields}
        body = STYLES[style](payload)
        assert cache.loads(body, "messages") == orjson.loads(body)


def test_appended_items_are_written_after_the_last_one_in_the_clients_own_bytes():
    cache = GrownBodies()
    payload = bodies(5, "model first")[-1]
    body = json.dumps(payload, indent=1).encode()  # the client's spacing stays as it was
    read, end = cache.read(body, "messages")
    anchor = {"role": "system", "content": '[LoopGuard] you are repeating \u00e9 "x"'}
    sent = {**read, "messages": [*read["messages"], anchor, {"role": "user", "content": "go"}]}
    written = appended(body, end, read, sent, "messages")
    assert orjson.loads(written) == sent
    assert written.startswith(body[:end]) and written.endswith(body[end:])


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: {**p, "messages": [*p["messages"][:-1], {"role": "user", "content": "replaced"}]},
        lambda p: {**p, "messages": [{"role": "system", "content": "first"}, *p["messages"]]},
        lambda p: {**p, "model": "other", "messages": [*p["messages"], {"role": "system", "content": "w"}]},
        lambda p: {**p, "extra": 1, "messages": [*p["messages"], {"role": "system", "content": "w"}]},
        lambda p: p,
    ],
)
def test_anything_but_items_appended_is_not_written_that_way(edit):
    cache = GrownBodies()
    body = orjson.dumps(bodies(5, "messages first")[-1])
    read, end = cache.read(body, "messages")
    assert appended(body, end, read, edit(read), "messages") is None
    assert appended(body, None, read, {**read, "messages": [*read["messages"], {}]}, "messages") is None
