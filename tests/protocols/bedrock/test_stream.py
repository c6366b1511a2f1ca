"""The Bedrock stream filter: the Anthropic filter over event-stream frames. Frames it relays
unchanged are the upstream's bytes; what it writes or renumbers is new frames; everything the
client gets reads back with the anthropic SDK's own Bedrock decoder (botocore's parser) into a
valid message."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.lib.bedrock._stream_decoder import AWSEventStreamDecoder
from anthropic.lib.streaming._messages import accumulate_event
from anthropic.types import Message, RawMessageStreamEvent
from pydantic import TypeAdapter
from support.bedrock_upstream import chunk_frames

from gateway.protocols.base import StreamOptions
from gateway.protocols.bedrock.stream import BedrockFilter
from gateway.protocols.failure import StreamFailure
from gateway.trace.model import ToolCall

EVENTS = TypeAdapter(RawMessageStreamEvent)


def ev(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def message_start() -> bytes:
    message = {
        "id": "msg_up",
        "type": "message",
        "role": "assistant",
        "model": "claude",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    return ev({"type": "message_start", "message": message})


def text(index: int, words: str) -> list[bytes]:
    return [
        ev({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        ev({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": words}}),
        ev({"type": "content_block_stop", "index": index}),
    ]


def tool(index: int, name: str, arguments: str) -> list[bytes]:
    block = {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": {}}
    return [
        ev({"type": "content_block_start", "index": index, "content_block": block}),
        ev(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": arguments},
            }
        ),
        ev({"type": "content_block_stop", "index": index}),
    ]


def end(reason: str = "tool_use") -> list[bytes]:
    return [
        ev(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": 9},
            }
        ),
        ev({"type": "message_stop"}),
    ]


EVENTS_OF_A_ROUND = [
    message_start(),
    *text(0, "Reading both."),
    *tool(1, "read_file", '{"path": "a.txt"}'),
    *tool(2, "grep", '{"pattern": "x"}'),
    *end(),
]
UPSTREAM = b"".join(chunk_frames(EVENTS_OF_A_ROUND))


def refusing(*names: str):
    return lambda call, position: call.name not in names


def relay(judge, upstream: bytes = UPSTREAM, piece: int = 7) -> tuple[bytes, BedrockFilter]:
    """The upstream's bytes fed in ``piece``-byte reads, as a socket may cut them."""
    relayed = BedrockFilter(judge, model="claude", options=StreamOptions(keepalive_s=None))
    out = b""
    for at in range(0, len(upstream), piece):
        out += b"".join(relayed.feed(upstream[at : at + piece]))
    out += b"".join(relayed.end_upstream())
    return out, relayed


def sdk_message(stream: bytes) -> Message:
    """The message the anthropic SDK's Bedrock stream builds from these bytes."""
    snapshot = None
    bufs: dict[int, bytes] = {}
    for sse in AWSEventStreamDecoder().iter_bytes(iter([stream])):
        data = sse.json()
        if sse.event == "error":
            raise AssertionError(f"an error event: {data}")
        event = EVENTS.validate_python(data)
        snapshot = accumulate_event(event=event, current_snapshot=snapshot, json_bufs=bufs)
    assert snapshot is not None
    return Message.model_validate(snapshot.model_dump())


def calls(message: Message) -> list[str]:
    return [block.name for block in message.content if block.type == "tool_use"]


@pytest.mark.parametrize("piece", [1, 7, 4096])
def test_a_kept_round_is_the_upstreams_frames_byte_for_byte(piece: int) -> None:
    out, _ = relay(lambda call, position: True, piece=piece)
    assert out == UPSTREAM
    assert calls(sdk_message(out)) == ["read_file", "grep"]


def test_a_refused_later_call_is_dropped_and_the_rest_stays_the_upstreams() -> None:
    out, _ = relay(refusing("grep"))
    kept = b"".join(chunk_frames(EVENTS_OF_A_ROUND[:7]))  # the message's start, the text and the read
    assert out.startswith(kept)
    message = sdk_message(out)
    assert calls(message) == ["read_file"] and message.stop_reason == "tool_use"


def test_a_round_refused_whole_is_ended_with_new_frames_the_sdk_reads() -> None:
    out, relayed = relay(refusing("read_file"))
    assert relayed.needs_decision
    out += b"".join(relayed.terminate("Stopped: the same read again.")) + b"".join(relayed.final())
    message = sdk_message(out)
    assert [b.type for b in message.content] == ["text", "text"]
    assert message.content[1].text == "Stopped: the same read again."  # its block renumbered to 1
    assert message.stop_reason == "end_turn"


def test_a_failure_mid_stream_ends_with_an_exception_frame() -> None:
    relayed = BedrockFilter(lambda call, position: True, options=StreamOptions(keepalive_s=None))
    head = b"".join(chunk_frames(EVENTS_OF_A_ROUND[:5]))  # the read's start, its input unfinished
    out = b"".join(relayed.feed(head))
    out += b"".join(relayed.fail(head, StreamFailure("The upstream broke off.", "upstream_error")))
    decoded = list(AWSEventStreamDecoder().iter_bytes(iter([out])))
    assert decoded[-1].event == "error"
    assert decoded[-1].json()["error"] == {"type": "internalServerException", "message": "The upstream broke off."}


def test_calls_are_judged_as_anthropic_calls() -> None:
    seen: list[ToolCall] = []
    relay(lambda call, position: seen.append(call) or True)
    assert [(c.name, c.arguments) for c in seen] == [("read_file", '{"path": "a.txt"}'), ("grep", '{"pattern": "x"}')]
