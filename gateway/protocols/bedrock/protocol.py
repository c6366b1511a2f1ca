"""Amazon Bedrock's InvokeModel with Anthropic bodies, as a guarded protocol.

Clients point their Bedrock base URL at the gateway's ``/bedrock`` (``AnthropicBedrock(
base_url="http://gateway/bedrock")``, Claude Code's ``ANTHROPIC_BEDROCK_BASE_URL``) and call
``POST /model/{modelId}/invoke`` or ``/invoke-with-response-stream`` below it. The body is the
Messages API's with ``anthropic_version: bedrock-2023-05-31``, without ``model`` or ``stream``:
the model and whether the reply streams are the path's, bound per request (``Path``). A model id
may be an inference-profile ARN whose ``/`` the client sends as ``%2F``: the upstream path is
the client's own spelling (``UpstreamSpec.raw_path``), as AWS routes and signs it.

Every role but the stream's and the errors is the Anthropic package's: reading the messages,
the edits, the replies. Streams are AWS event-stream frames, each carrying one Anthropic event
(``stream.BedrockFilter``). Bedrock keeps no conversation and no object per request: no history,
nothing owned. Requests are signed with the gateway's AWS credentials (``upstream/sigv4.py``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from gateway.protocols.anthropic import parse, rewrite, tokens
from gateway.protocols.anthropic import replies as anthropic
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.bedrock import replies
from gateway.protocols.bedrock.stream import BedrockFilter
from gateway.protocols.bound import Bound
from gateway.protocols.declaration import Declaration, UpstreamSpec
from gateway.protocols.eventstream import CONTENT_TYPE
from gateway.protocols.roles import Adapter, Authored, Kind, Requests, Streams
from gateway.upstream.signing import ProviderSettings
from gateway.upstream.sigv4 import SigV4Signer, regional_url, signing_client

__all__ = ["ADAPTER", "DECLARED", "KIND", "Path"]

MOUNT = "/bedrock"
_STREAMING = "invoke-with-response-stream"
ENDPOINT = "https://bedrock-runtime.{region}.amazonaws.com"


def signer(settings: ProviderSettings) -> SigV4Signer:
    return SigV4Signer(settings, "bedrock")


def is_bedrock_body(body: Any) -> bool:
    """A recorded InvokeModel body: Anthropic messages with an ``anthropic_version`` in the body
    (``bedrock-2023-05-31``, or the SDK's API version) and no ``model`` (the path names it)."""
    if not isinstance(body, dict) or "model" in body:
        return False
    return isinstance(body.get("anthropic_version"), str) and isinstance(body.get("messages"), list)


# The Bedrock runtime (``upstream.bedrock_*``), InvokeModel's and Converse's alike: one signer.
UPSTREAM = UpstreamSpec(
    config="bedrock",
    default_base_url=ENDPOINT,
    default_url=lambda extra: regional_url(ENDPOINT, extra),
    # A configured ``bedrock_api_key`` is a Bedrock API key: ``Authorization: Bearer``.
    credentials=("authorization",),
    strip_v1=False,
    mount=MOUNT,
    raw_path=True,  # an ARN model id's %2F goes as spelt: AWS routes and signs the raw path
    settings=("region",),
    signer=signer,
    signed_client=signing_client,  # a signing client's requests are one client's sessions
    secrets=("x-amz-security-token",),
)


DECLARED = Declaration(
    family="aws.bedrock.invoke_model",
    routes=(f"{MOUNT}/model/{{model:path}}/invoke", f"{MOUNT}/model/{{model:path}}/{_STREAMING}"),
    upstream=UPSTREAM,
    # Bedrock's other runtime routes (count-tokens, async invocations, Converse's own routes
    # are another adapter's), relayed signed to the same endpoint, errors in Bedrock's shape.
    relays=(f"{MOUNT}/{{rest:path}}",),
    id_fields=frozenset({"id", "tool_use_id"}),
    auth_error_type="UnrecognizedClientException",
    reads=is_bedrock_body,
    stream_notes=False,  # a stream is binary frames: no room for SSE comments
    stream_type=CONTENT_TYPE,
    stateless=(f"POST {MOUNT}/model/{{model:path}}/count-tokens",),
    # A model called over a bidirectional stream (speech in, speech and tool calls out): frames
    # the gateway does not judge.
    unjudged=(f"{MOUNT}/model/{{model:path}}/invoke-with-bidirectional-stream",),
)


@dataclass(frozen=True, slots=True)
class Path(Bound):
    """What one request's path says: its model, and whether the reply streams."""

    def termination_reply(self, text: str, payload: dict[str, Any]) -> dict[str, Any]:
        return anthropic.termination_message(text, self.model)

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return replies.termination_stream(text, self.model)

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> BedrockFilter:
        return BedrockFilter(judge, model=self.model, options=options)

    def adapter(self) -> Adapter:
        requests = Requests(
            items_field="messages",
            payload_fields=("system", "tools"),
            items=parse.messages_of,
            conversation=parse.conversation,
            with_items=rewrite.with_messages,
            stream=self.streams,
            model=self.model_of,
            user=parse.user,
            item_text=tokens.item_text,
        )
        authored = Authored(self.termination_reply, self.termination_stream, replies.error_body, replies.error_event)
        streams = Streams(self.stream_filter, replies.stream_answer, replies.stream_prepend_text)
        return Adapter("bedrock", DECLARED, requests, rewrite.EDITS, anthropic.REPLIES, streams, authored, binds=at)


def at(scope: dict[str, Any]) -> Adapter:
    """The adapter bound to the request's path, ``/bedrock/model/{model}/{action}`` (decoded:
    an ARN's ``%2F`` is its ``/``)."""
    model, _, action = scope["path"][len(MOUNT) + len("/model/") :].rpartition("/")
    return _bound(model, action == _STREAMING)


@lru_cache(maxsize=256)
def _bound(model: str, streaming: bool) -> Adapter:
    """An agent fleet calls a handful of models: each binding is built once (bounded)."""
    return Path(model, streaming).adapter()


ADAPTER = Path().adapter()  # unbound: the routes' adapter, before a path binds it


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(ADAPTER.name, DECLARED, ADAPTER.requests, ADAPTER.authored, _build)
