"""Converse streams and replies read back the way boto3 reads them (botocore's event-stream
parser and its rest-json parser over the bedrock-runtime service model)."""

from __future__ import annotations

from typing import Any

import botocore.session
from botocore.eventstream import EventStream
from botocore.parsers import EventStreamJSONParser, create_parser

_MODEL = botocore.session.get_session().get_service_model("bedrock-runtime")


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Any:
        yield self.data

    def close(self) -> None:
        return None


def stream_events(data: bytes) -> list[dict[str, Any]]:
    """A ConverseStream body as boto3 yields its events (raises as boto3 does)."""
    shape = _MODEL.operation_model("ConverseStream").output_shape.members["stream"]
    return list(EventStream(_Raw(data), shape, EventStreamJSONParser(), "ConverseStream"))


def converse_reply(status: int, body: bytes, headers: dict[str, str] | None = None) -> dict[str, Any]:
    """A Converse answer as botocore parses it (an error under ``Error``)."""
    answer = {"status_code": status, "headers": headers or {}, "body": body}
    return create_parser("rest-json").parse(answer, _MODEL.operation_model("Converse").output_shape)
