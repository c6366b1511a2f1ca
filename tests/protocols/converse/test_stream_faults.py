"""A Converse stream whose upstream breaks the protocol, through a real gateway, read by boto3's
``converse_stream``: whatever the fault (a block index that is no integer, a frame botocore
refuses, a frame only botocore's own limits allow, bytes that are no frames, a JSON reply to a
stream request), the looping ``toolUse`` never reaches the client, and the stream the client
reads ends well-formed: an ``internalServerException`` boto3 raises, or the run's final text."""

from __future__ import annotations

import binascii
import json
import struct
from typing import Any

import pytest
from botocore import eventstream as botocore_eventstream
from botocore.exceptions import EventStreamError
from support.converse_gateway import TOOLS, start_converse
from support.converse_upstream import MODEL, Said, event

from gateway.protocols.eventstream import frame

__all__ = ["start_converse"]

START = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_LOOP", "name": "read_file"}}}
# The same block index begun again once the first call went out under its verdict.
AGAIN = {"contentBlockIndex": 0, "start": {"toolUse": {"toolUseId": "tooluse_AGAIN", "name": "read_file"}}}
INPUT = {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"path": "a.txt"}'}}}


def looping(index: Any = 0, start: dict | None = None) -> list[bytes]:
    """A message whose one block is the looping call, its index written as ``index``."""
    return [
        event("messageStart", {"role": "assistant"}),
        event("contentBlockStart", {**(start or START), "contentBlockIndex": index}),
        event("contentBlockDelta", {**INPUT, "contentBlockIndex": index}),
        event("contentBlockStop", {"contentBlockIndex": index}),
        event("messageStop", {"stopReason": "tool_use"}),
        event("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2}, "metrics": {}}),
    ]


def crc_fixed(raw: bytes, total: int | None = None) -> bytes:
    """``raw`` with its prelude's total length set to ``total`` and both checksums made right."""
    body = bytearray(raw[:-4])
    if total is not None:
        body[0:4] = struct.pack(">I", total)
    body[8:12] = struct.pack(">I", binascii.crc32(bytes(body[:8])))
    return bytes(body) + struct.pack(">I", binascii.crc32(bytes(body)))


def damaged(raw: bytes) -> bytes:
    out = bytearray(raw)
    out[-6] ^= 0xFF  # the payload changed, the message checksum no longer matches
    return bytes(out)


FAULTS = {
    **{f"index-{i!r}": b"".join(looping(i)) for i in ("0", 0.0, True, -1, None)},
    "started-twice": b"".join(looping()[:2] + [event("contentBlockStart", START), *looping()[2:]]),
    "after-its-stop": b"".join(looping()[:4] + [event("contentBlockStart", AGAIN), *looping()[4:]]),
    "message-checksum": b"".join([looping()[0], damaged(looping()[1]), *looping()[2:]]),
    "zero-length": b"".join([looping()[0], b"\x00" * 16, *looping()[1:]]),
    "2-GiB-length": b"".join([looping()[0], crc_fixed(looping()[1], 2**31), *looping()[1:]]),
    "sse-instead": b"data: " + json.dumps({"contentBlockStart": START}).encode() + b"\n\n" + b"".join(looping()),
}
UNJUDGED = (EventStreamError,)


def loop_history(times: int = 4) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"text": "summarize a.txt"}]}]
    for n in range(times):
        use = {"toolUseId": f"tooluse_{n}", "name": "read_file", "input": {"path": "a.txt"}}
        messages.append({"role": "assistant", "content": [{"toolUse": use}]})
        result = {"toolUseId": f"tooluse_{n}", "content": [{"text": "the same content"}]}
        messages.append({"role": "user", "content": [{"toolResult": result}]})
    return messages


def read_until_the_end(client: Any, messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], Exception | None]:
    """Every event boto3 yields, and what it raised at the end (None: it ended cleanly)."""
    got: list[dict[str, Any]] = []
    try:
        for each in client.converse_stream(modelId=MODEL, messages=messages, toolConfig=TOOLS)["stream"]:
            got.append(each)
    except EventStreamError as exc:
        return got, exc
    return got, None


def tool_uses(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e]


@pytest.mark.parametrize("fault", FAULTS.values(), ids=FAULTS.keys())
def test_a_stream_breaking_the_protocol_ends_with_an_exception_boto3_raises(start_converse, fault):
    """On a fresh conversation (the call itself would pass): the fault ends the stream there,
    with the one exception frame, nothing after it."""
    _, client, _ = start_converse(lambda body: Said(frames=fault))
    got, raised = read_until_the_end(client, [{"role": "user", "content": [{"text": "read a.txt"}]}])
    # after-its-stop: the first call, complete and judged, went out before the fault; no other
    delivered = ["tooluse_LOOP"] if b"tooluse_AGAIN" in fault else []
    assert [u["toolUseId"] for u in tool_uses(got)] == delivered
    assert isinstance(raised, EventStreamError) and raised.response["Error"]["Code"] == "internalServerException"
    assert "The upstream model provider sent" in raised.response["Error"]["Message"]


def test_a_frame_only_botocores_own_limit_allows_is_judged_not_passed_unread(start_converse):
    """A payload just under botocore's limit (24 MiB today) with its headers: over the limit in
    all, a frame boto3 reads. The looping call in it is judged like any other: the run ends, the
    5th call never sent."""
    limit = botocore_eventstream._MAX_PAYLOAD_LENGTH  # the installed release's own limit
    padding = "x" * (limit - 200)
    big = frame("contentBlockStart", json.dumps({**START, "p": padding}).encode())
    assert len(big) > limit
    frames = looping()
    _, client, _ = start_converse(lambda body: Said(frames=b"".join([frames[0], big, *frames[2:]])))
    got, raised = read_until_the_end(client, loop_history())
    assert tool_uses(got) == [] and raised is None
    text = "".join(e["contentBlockDelta"]["delta"].get("text", "") for e in got if "contentBlockDelta" in e)
    assert "[LoopGuard]" in text and got[-2]["messageStop"]["stopReason"] == "end_turn"


def test_a_stream_request_answered_with_json_ends_in_a_stream_boto3_reads(start_converse):
    """The 5th identical call comes back as one JSON body to ``converse-stream``: judged whole,
    and the run's end is written as the event stream boto3's reader parses, not as JSON."""
    upstream, client, _ = start_converse(lambda body: Said(calls=[("read_file", {"path": "a.txt"})], whole=True))
    got, raised = read_until_the_end(client, loop_history())
    assert raised is None and tool_uses(got) == []
    assert list(got[0]) == ["messageStart"] and "messageStop" in got[-2] and "metadata" in got[-1]
    assert "[LoopGuard]" in "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in got if "contentBlockDelta" in e
    )
    assert len(upstream.requests) >= 1
