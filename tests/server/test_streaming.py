"""Streaming: chunk by chunk, in order, never buffered, and abandoned upstream when the client goes.

Tool-call delta shapes are the ones gateways are known to break on; each is relayed and
then accumulated by the official SDK's own stream helper, which is what agents run.
"""

from __future__ import annotations

import time

import httpx
import orjson
import pytest
from support.deltas import tc
from support.upstream import Reply

from .helpers import async_sdk, sdk, wait_for

CHAT = "/v1/chat/completions"


@pytest.fixture(params=[True, False], ids=["fast", "general"])
def gateway(request, make_gateway, transport) -> str:
    """Each stream test with the chat fast paths and with the general reader alone
    (``streaming.fast_paths``): the client must get the same bytes. The reader does not depend
    on the upstream client, so the general one runs on the default transport only."""
    if not request.param and transport != "aiohttp":
        pytest.skip("the general reader runs on the default transport")
    return make_gateway(streaming={"fast_paths": request.param})


STREAM_BODY = {"model": "m", "messages": [{"role": "user", "content": "go"}], "stream": True}


def event(delta: dict | None = None, finish: str | None = None, choices: list | None = None, **extra) -> bytes:
    chunk = {
        "id": "chatcmpl-s",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m",
        "choices": choices if choices is not None else [{"index": 0, "delta": delta or {}, "finish_reason": finish}],
        **extra,
    }
    return b"data: " + orjson.dumps(chunk) + b"\n\n"


def call(index: int, id: str | None = None, name: str | None = None, args: str | None = None) -> dict:
    """One tool-call delta; only the fields given are present, as providers send them."""
    return {"tool_calls": [tc(index, id, name, args)]}


DONE = b"data: [DONE]\n\n"
START = event({"role": "assistant", "content": None})
END = event(finish="tool_calls")

# name -> (SSE events as the upstream sends them, the tool calls an agent must end up with)
SHAPES: dict[str, tuple[list[bytes], list[tuple[str, str, str]]]] = {
    "argument deltas without id": (
        [
            START,
            event(call(0, "call_a", "read_file", "")),
            event(call(0, args='{"pa')),
            event(call(0, args='th": "src/')),
            event(call(0, args='main.py"}')),
            END,
            DONE,
        ],
        [("call_a", "read_file", '{"path": "src/main.py"}')],
    ),
    "whole call in one delta": (
        [START, event(call(0, "call_b", "list_dir", '{"dir": "."}')), END, DONE],
        [("call_b", "list_dir", '{"dir": "."}')],
    ),
    "parallel calls, distinct indices, interleaved": (
        [
            START,
            event(call(0, "call_1", "read_file", "")),
            event(call(1, "call_2", "grep", "")),
            event(call(0, args='{"path": "a.py"}')),
            event(call(1, args='{"pattern": "def "')),
            event(call(2, "call_3", "read_file", '{"path": "b.py"}')),
            event(call(1, args="}")),
            END,
            DONE,
        ],
        [
            ("call_1", "read_file", '{"path": "a.py"}'),
            ("call_2", "grep", '{"pattern": "def "}'),
            ("call_3", "read_file", '{"path": "b.py"}'),
        ],
    ),
    "closing brace in its own delta": (
        [START, event(call(0, "call_c", "run", '{"cmd": "ls -la"')), event(call(0, args="}")), END, DONE],
        [("call_c", "run", '{"cmd": "ls -la"}')],
    ),
    "extra empty-argument chunks": (
        [
            START,
            event(call(0, "call_d", "write", "")),
            event(call(0, args="")),
            event(call(0, args='{"x": 1}')),
            event(call(0, args="")),
            event(call(0, args="")),
            END,
            DONE,
        ],
        [("call_d", "write", '{"x": 1}')],
    ),
    "unicode and escapes split across deltas": (
        [
            START,
            event(call(0, "call_e", "note", '{"t": "h\u00e9')),
            event(call(0, args="\u65e5\\n\\u00")),
            event(call(0, args='e9 \\"q\\""}')),
            END,
            DONE,
        ],
        [("call_e", "note", '{"t": "h\u00e9\u65e5\\n\\u00e9 \\"q\\""}')],
    ),
    "content then a call, usage chunk with no choices": (
        [
            START,
            event({"content": "Let me look."}),
            event(call(0, "call_f", "read_file", '{"path": "x"}')),
            END,
            event(choices=[], usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
            DONE,
        ],
        [("call_f", "read_file", '{"path": "x"}')],
    ),
    "keep-alive comments and CRLF line endings": (
        [
            b": PROCESSING\r\n\r\n",
            START.replace(b"\n", b"\r\n"),
            b": ping\n\n",
            event(call(0, "call_g", "poll", '{"job": 7}')).replace(b"\n", b"\r\n"),
            END,
            DONE,
        ],
        [("call_g", "poll", '{"job": 7}')],
    ),
}


def _split_anywhere(events: list[bytes], size: int = 7) -> list[bytes]:
    """The same bytes cut into network chunks that split events, lines and UTF-8 sequences."""
    data = b"".join(events)
    return [data[i : i + size] for i in range(0, len(data), size)]


def _calls(completion) -> list[tuple[str, str, str]]:
    return [(c.id, c.function.name, c.function.arguments) for c in completion.choices[0].message.tool_calls or []]


# Streams with nothing for the guard to hold (no tool calls) must come out byte for byte.
CONTENT_STREAMS: dict[str, list[bytes]] = {
    "plain content": [START, *(event({"content": f"part {i} "}) for i in range(20)), event(finish="stop"), DONE],
    "unicode content": [
        START,
        event({"content": "h\u00e9llo \U0001f30d"}),
        event({"content": "\u65e5\u672c"}),
        event(finish="stop"),
        DONE,
    ],
    "comments, CRLF, usage chunk": [
        b": PROCESSING\r\n\r\n",
        START.replace(b"\n", b"\r\n"),
        b": ping\n\n",
        event({"content": "x"}),
        event(finish="stop"),
        event(choices=[], usage={"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}),
        DONE,
    ],
    "provider extras kept": [
        START,
        event({"content": "r", "reasoning_content": "think"}, system_fingerprint="fp_1", service_tier="default"),
        event(finish="length"),
        DONE,
    ],
}


@pytest.mark.parametrize("split", [False, True], ids=["event-per-chunk", "split-anywhere"])
@pytest.mark.parametrize("name", CONTENT_STREAMS)
def test_content_streams_relayed_byte_for_byte(gateway, upstream, name, split):
    events = CONTENT_STREAMS[name]
    upstream.queue(Reply(raw_stream=_split_anywhere(events) if split else events))
    with httpx.stream("POST", gateway + CHAT, json=STREAM_BODY) as response:
        received = response.read()
    assert response.status_code == 200
    assert received == b"".join(events)


def strict_accumulate(raw: bytes) -> tuple[str, list[tuple[str, str, str]], str | None]:
    """Merge a chat stream as a strict client does, failing on what the SDK rejects:
    a chunk missing id/object/created/model/choices, a tool-call delta without ``index``, a call
    that never got its id or name, anything after [DONE]."""
    content, calls, finish, done = "", {}, None, False
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = [line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:")]
        if not data:
            continue
        assert not done, "data after [DONE]"
        if data == [b"[DONE]"]:
            done = True
            continue
        chunk = orjson.loads(b"\n".join(data))
        assert {"id", "object", "created", "model", "choices"} <= set(chunk), chunk
        assert "error" not in chunk
        for choice in chunk["choices"]:
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            for part in delta.get("tool_calls") or []:
                assert "index" in part, part
                call = calls.setdefault(part["index"], {"id": None, "name": None, "arguments": ""})
                call["id"] = part.get("id") or call["id"]
                function = part.get("function") or {}
                call["name"] = function.get("name") or call["name"]
                call["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    assert done, "stream ended without [DONE]"
    merged = [(c["id"], c["name"], c["arguments"]) for _, c in sorted(calls.items())]
    assert all(i and n for i, n, _ in merged), merged
    return content, merged, finish


@pytest.mark.parametrize("split", [False, True], ids=["event-per-chunk", "split-anywhere"])
@pytest.mark.parametrize("shape", SHAPES)
def test_tool_call_shapes_merge_to_the_same_calls(gateway, upstream, shape, split):
    # The guard may hold tool-call deltas until it has judged them and re-emit them in another
    # split; what a strict client assembles must be exactly what the upstream meant.
    events, expected = SHAPES[shape]
    upstream.queue(Reply(raw_stream=_split_anywhere(events) if split else events))
    with httpx.stream("POST", gateway + CHAT, json=STREAM_BODY) as response:
        received = response.read()
    assert response.status_code == 200
    assert strict_accumulate(received) == strict_accumulate(b"".join(events))
    assert strict_accumulate(received)[1] == expected


@pytest.mark.parametrize("shape", SHAPES)
def test_tool_call_shapes_sdk_sync_accumulator(gateway, upstream, shape):
    events, expected = SHAPES[shape]
    upstream.queue(Reply(raw_stream=_split_anywhere(events)))
    with sdk(gateway + "/v1").chat.completions.stream(model="m", messages=STREAM_BODY["messages"]) as stream:
        for _ in stream:
            pass
        completion = stream.get_final_completion()
    assert _calls(completion) == expected
    assert completion.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("shape", SHAPES)
async def test_tool_call_shapes_sdk_async_accumulator(gateway, upstream, shape):
    events, expected = SHAPES[shape]
    upstream.queue(Reply(raw_stream=events))
    async with async_sdk(gateway + "/v1") as client:
        async with client.chat.completions.stream(model="m", messages=STREAM_BODY["messages"]) as stream:
            async for _ in stream:
                pass
            completion = await stream.get_final_completion()
    assert _calls(completion) == expected


def test_chunk_order_preserved(gateway, upstream):
    text = "".join(f"<{i:03d}>" for i in range(200))  # 200 distinct pieces; any reorder shows
    upstream.queue(Reply(content=text))
    stream = sdk(gateway + "/v1").chat.completions.create(model="m", messages=[], stream=True)
    pieces = [c.choices[0].delta.content for c in stream if c.choices and c.choices[0].delta.content]
    assert "".join(pieces) == text
    assert len(pieces) == len(text) // 5  # the upstream's 5-character pieces, none merged away


# ---- never buffered: the first chunk reaches the client while the upstream is still producing ----
# Ten chunks 0.2 s apart: a buffering relay would deliver everything at once after ~2 s. The checks
# are on the order of events (upstream not finished when the first chunk is in the client's hands)
# and on the spread of arrivals, not on absolute speed.

SLOW = dict(content="x" * 50, chunk_delay=0.2)  # role chunk + 10 content chunks + finish chunk
SPREAD = 1.2  # seconds between first and last arrival; unbuffered is ~2.2, buffered ~0


def test_first_chunk_before_upstream_finishes_httpx(gateway, upstream):
    upstream.queue(Reply(**SLOW))
    arrivals, finished_at_first = [], None
    with httpx.stream("POST", gateway + CHAT, json=STREAM_BODY) as response:
        for chunk in response.iter_raw():
            if chunk:
                if not arrivals:
                    finished_at_first = upstream.finished_streams
                arrivals.append(time.monotonic())
    assert finished_at_first == 0
    assert upstream.finished_streams == 1
    assert arrivals[-1] - arrivals[0] > SPREAD


def test_first_chunk_before_upstream_finishes_sdk_sync(gateway, upstream):
    upstream.queue(Reply(**SLOW))
    stream = sdk(gateway + "/v1").chat.completions.create(model="m", messages=[], stream=True)
    arrivals, finished_at_first = [], None
    for _ in stream:
        if not arrivals:
            finished_at_first = upstream.finished_streams
        arrivals.append(time.monotonic())
    assert finished_at_first == 0
    assert arrivals[-1] - arrivals[0] > SPREAD


async def test_first_chunk_before_upstream_finishes_sdk_async(gateway, upstream):
    upstream.queue(Reply(**SLOW))
    arrivals, finished_at_first = [], None
    async with async_sdk(gateway + "/v1") as client:
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        async for _ in stream:
            if not arrivals:
                finished_at_first = upstream.finished_streams
            arrivals.append(time.monotonic())
    assert finished_at_first == 0
    assert arrivals[-1] - arrivals[0] > SPREAD


# ---- a client that leaves mid-stream stops the upstream generation ----------------------------

LONG = dict(content="y" * 500, chunk_delay=0.05)  # ~5 s of generation if nobody stops it


def _cancelled(upstream) -> bool:
    return wait_for(lambda: upstream.cancelled_streams == 1, timeout=3.0) and upstream.finished_streams == 0


def test_disconnect_cancels_upstream_httpx(gateway, upstream):
    upstream.queue(Reply(**LONG))
    with httpx.Client() as client, client.stream("POST", gateway + CHAT, json=STREAM_BODY) as response:
        next(response.iter_raw())
    # Leaving the block closed the connection with the body unread: the client is gone.
    assert _cancelled(upstream)


def test_disconnect_cancels_upstream_sdk_sync(gateway, upstream):
    upstream.queue(Reply(**LONG))
    client = sdk(gateway + "/v1")
    stream = client.chat.completions.create(model="m", messages=[], stream=True)
    next(iter(stream))
    stream.close()
    client.close()
    assert _cancelled(upstream)


async def test_disconnect_cancels_upstream_sdk_async(gateway, upstream):
    upstream.queue(Reply(**LONG))
    async with async_sdk(gateway + "/v1") as client:
        stream = await client.chat.completions.create(model="m", messages=[], stream=True)
        await stream.__anext__()
        await stream.close()
    assert _cancelled(upstream)


def test_disconnect_on_passthrough_stream_cancels_upstream(gateway, upstream):
    events = [b'data: {"type":"response.output_text.delta","delta":"z"}\n\n'] * 100
    upstream.passthrough_script.append(Reply(raw_stream=events, chunk_delay=0.05))
    with httpx.Client() as client, client.stream("POST", gateway + "/v1/responses", json={"stream": True}) as response:
        next(response.iter_raw())
    assert _cancelled(upstream)


def test_completed_stream_is_not_counted_as_cancelled(gateway, upstream):
    # Guards the two tests above against a harness that counts every stream as cancelled.
    upstream.queue(Reply(content="short"))
    httpx.post(gateway + CHAT, json=STREAM_BODY).read()
    assert wait_for(lambda: upstream.finished_streams == 1)
    assert upstream.cancelled_streams == 0
