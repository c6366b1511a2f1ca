"""The Bedrock adapter's declaration and bindings: model and streaming from the path, the
Anthropic roles for bodies, the regional endpoint, ARN paths kept as spelt, errors in Bedrock's
shape."""

from __future__ import annotations

import base64

import orjson
import pytest
from botocore.eventstream import EventStreamBuffer

from gateway.config import Config
from gateway.protocols.bedrock import protocol
from gateway.protocols.bedrock.replies import error_body, error_event
from gateway.protocols.errors import error_headers
from gateway.protocols.registry import guarded_route, reader_of
from gateway.server.app import provider_configs
from gateway.server.paths import PathError, canonical_path

ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-v1:0"
BODY = {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    ("path", "model", "streams"),
    [
        (
            "/bedrock/model/anthropic.claude-3-haiku-20240307-v1:0/invoke",
            "anthropic.claude-3-haiku-20240307-v1:0",
            False,
        ),
        (f"/bedrock/model/{ARN}/invoke-with-response-stream", ARN, True),
    ],
)
def test_the_path_binds_the_model_and_whether_the_reply_streams(path: str, model: str, streams: bool) -> None:
    found = guarded_route(path)
    assert found is not None and found[1].name == "bedrock"
    bound = protocol.ADAPTER.at({"path": path})
    assert bound is not None
    assert bound.requests.model(BODY) == model and bound.requests.stream(BODY) is streams
    assert bound.authored.termination_reply("stop", BODY)["model"] == model


def test_a_recorded_invoke_body_replays_as_bedrock() -> None:
    kind = reader_of(BODY)
    assert kind is not None and kind.name == "bedrock"
    assert reader_of({**BODY, "model": "claude"}).name != "bedrock"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"bedrock_region": "eu-west-3"}, "https://bedrock-runtime.eu-west-3.amazonaws.com"),
        ({"bedrock_base_url": "https://vpce.example/bedrock"}, "https://vpce.example/bedrock"),
    ],
)
def test_the_default_endpoint_is_the_regions(settings: dict[str, str], expected: str) -> None:
    config = Config.model_validate({"upstream": settings})
    assert provider_configs(config)["bedrock"].base_url == expected


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        (
            b"/bedrock/model/arn:aws:bedrock:x:1:inference-profile%2fus.m/invoke",
            b"/bedrock/model/arn:aws:bedrock:x:1:inference-profile%2Fus.m/invoke",
        ),
        (b"/bedrock/model/m%3A0/invoke", b"/bedrock/model/m%3A0/invoke"),
    ],
)
def test_an_encoded_slash_stays_encoded_under_the_mount(raw: bytes, kept: bytes) -> None:
    assert canonical_path(raw, slashes=True) == kept


@pytest.mark.parametrize(
    "raw",
    [b"/bedrock/model/a%2F..%2Fb/invoke", b"/bedrock/model/a%2F%2Fb/invoke", b"/bedrock/model/%2E%2E/invoke"],
)
def test_an_encoded_slash_cannot_make_a_dot_segment_or_an_empty_one(raw: bytes) -> None:
    with pytest.raises(PathError):
        canonical_path(raw, slashes=True)


def test_elsewhere_an_encoded_slash_is_still_refused() -> None:
    with pytest.raises(PathError):
        canonical_path(b"/v1/models/a%2Fb")


@pytest.mark.parametrize(
    ("type", "code", "name"),
    [
        ("invalid_request_error", "invalid_json", "ValidationException"),
        ("upstream_error", "upstream_timeout", "ModelTimeoutException"),
        ("upstream_error", "upstream_unavailable", "ServiceUnavailableException"),
        ("upstream_error", "upstream_unsigned", "AccessDeniedException"),
        ("UnrecognizedClientException", "invalid_api_key", "UnrecognizedClientException"),
        ("loop_detected", "loop_detected", "ValidationException"),
    ],
)
def test_errors_are_named_as_bedrock_names_them(type: str, code: str, name: str) -> None:
    body = error_body("no", type, code)
    assert orjson.loads(orjson.dumps(body)) == {"message": "no", "__type": name}
    assert error_headers(body) == ((b"x-amzn-errortype", name.encode()),)


def test_an_error_mid_stream_is_an_exception_frame_botocore_reads() -> None:
    buffer = EventStreamBuffer()
    buffer.add_data(error_event(error_body("stopped", "loop_detected", "loop_detected")))
    (message,) = list(buffer)
    assert message.headers[":message-type"] == "exception"
    assert message.headers[":exception-type"] == "validationException"
    assert orjson.loads(message.payload) == {"message": "stopped"}


def test_a_termination_stream_is_chunk_frames_of_anthropic_events() -> None:
    bound = protocol.ADAPTER.at({"path": "/bedrock/model/m:0/invoke-with-response-stream"})
    assert bound is not None
    buffer = EventStreamBuffer()
    buffer.add_data(b"".join(bound.authored.termination_stream("stop", BODY)))
    events = [orjson.loads(base64.b64decode(orjson.loads(m.payload)["bytes"])) for m in buffer]
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert protocol.DECLARED.stream_type == "application/vnd.amazon.eventstream"
