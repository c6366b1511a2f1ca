"""The openai SDK as the oracle: its pydantic models validate what the gateway writes, and its
own SSE decoder reads the client stream."""

from __future__ import annotations

import typing
from typing import Any

import orjson
from openai._streaming import SSEDecoder as SDKDecoder
from openai.types.responses import Response, ResponseStreamEvent

_EVENT_MODELS = {
    model.model_fields["type"].annotation.__args__[0]: model
    for model in typing.get_args(typing.get_args(ResponseStreamEvent)[0])
}


def validate_event(event: dict[str, Any]) -> Any:
    """The event as the SDK's model for its type (strict validation, unknown types fail)."""
    return _EVENT_MODELS[event["type"]].model_validate(event)


def validate_response(body: dict[str, Any]) -> Response:
    return Response.model_validate(body)


def client_events(stream: bytes) -> list[dict[str, Any]]:
    """What ``client.responses.create(stream=True)`` iterates over: each SSE event's JSON, read
    by the SDK's own decoder, validated by its model. ``[DONE]`` ends the stream."""
    decoder = SDKDecoder()
    found: list[dict[str, Any]] = []
    for line in stream.splitlines() + [b""]:
        sse = decoder.decode(line.decode())
        if sse is None or not sse.data:
            continue
        if sse.data.startswith("[DONE]"):
            break
        event = orjson.loads(sse.data)
        assert sse.event in (None, event["type"]), (sse.event, event["type"])
        validate_event(event)
        found.append(event)
    return found


def check_numbering(events: list[dict[str, Any]]) -> None:
    """Sequence numbers strictly increase from 0; items open in output_index order 0, 1, ...;
    the closing response lists exactly the finished items the client saw, in order."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e["output_index"] for e in events if e["type"] == "response.output_item.added"]
    assert added == list(range(len(added)))
    done = [e["item"] for e in events if e["type"] == "response.output_item.done"]
    assert [e["output_index"] for e in events if e["type"] == "response.output_item.done"] == added
    closing = [e for e in events if e["type"] in ("response.completed", "response.incomplete", "response.failed")]
    assert len(closing) == 1 and events[-1] is closing[0]
    assert closing[0]["response"]["output"] == done
