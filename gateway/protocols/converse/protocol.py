"""Amazon Bedrock's Converse API (``converse`` / ``converse-stream``) as a guarded protocol.

Clients (boto3 ``bedrock-runtime``, Strands, LangChain's ``ChatBedrockConverse``) point their
endpoint at the gateway's ``/bedrock``; the rest of the path is Bedrock's own
(``/model/{modelId}/converse``), sent to the Bedrock runtime (provider ``bedrock``: the same
upstream settings as InvokeModel). The model and whether the reply streams are in the path, not
the body: ``at`` binds an adapter to them per request (``Path``). Streams are AWS event-stream
frames (``application/vnd.amazon.eventstream``). Items are the request's ``messages``;
``system`` is the system prompt. Every request carries its whole conversation: no history role.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.protocols import eventstream
from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.bedrock.protocol import UPSTREAM
from gateway.protocols.bound import Bound
from gateway.protocols.converse import events, parse, replies, rewrite, stream, tokens
from gateway.protocols.declaration import Declaration
from gateway.protocols.roles import Adapter, Authored, Kind, Requests, Streams

__all__ = ["ADAPTER", "KIND", "Path"]

MOUNT = "/bedrock"
_MODELS = f"{MOUNT}/model/"
_UNARY, _STREAMING = "/converse", "/converse-stream"


DECLARED = Declaration(
    family="aws.bedrock.converse",
    # A model id may be an inference profile's or a provisioned model's ARN, with "/" in it
    # (sent as %2F, read decoded; sent upstream as spelt): the model is the path up to the method.
    routes=(f"{_MODELS}{{model:path}}{_UNARY}", f"{_MODELS}{{model:path}}{_STREAMING}"),
    upstream=UPSTREAM,  # the Bedrock runtime, shared with InvokeModel (``upstream.bedrock_*``)
    id_fields=frozenset({"toolUseId"}),
    auth_error_type="authentication_error",
    stream_notes=False,  # a binary frame stream: an SSE comment in it would break every frame after it
    stream_type=eventstream.CONTENT_TYPE,
    reads=parse.is_converse_body,
)


@dataclass(frozen=True, slots=True)
class Path(Bound):
    """What one request's path says: its model, and whether the reply streams."""

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> stream.ConverseStreamFilter:
        return stream.ConverseStreamFilter(judge, options)

    def adapter(self) -> Adapter:
        """The adapter for requests on this path."""
        requests = Requests(
            items_field="messages",
            payload_fields=("system", "toolConfig"),
            items=parse.messages_of,
            conversation=parse.conversation,
            with_items=rewrite.with_messages,
            stream=self.streams,
            model=self.model_of,
            user=_no_user,
            item_text=tokens.item_text,
        )
        streams = Streams(self.stream_filter, stream.stream_answer, stream.stream_prepend_text)
        return Adapter("converse", DECLARED, requests, rewrite.EDITS, replies.REPLIES, streams, AUTHORED, binds=at)


def _no_user(payload: dict[str, Any]) -> str | None:
    return None  # Converse names no end user (``requestMetadata`` is the caller's free-form tags)


def _termination_stream(text: str, payload: dict[str, Any]) -> list[bytes]:
    return events.whole_stream(text)


def _error_event(body: dict[str, Any]) -> bytes:
    return events.exception(replies.stream_exception(body), str(body.get("message", "")))


AUTHORED = Authored(replies.termination, _termination_stream, replies.error_body, _error_event)


def at(scope: dict[str, Any]) -> Adapter:
    """The adapter bound to the request's path: its model and its method."""
    path: str = scope["path"]
    streaming = path.endswith(_STREAMING)
    model = path[len(_MODELS) : -len(_STREAMING if streaming else _UNARY)] if path.startswith(_MODELS) else ""
    return Path(model, streaming).adapter()


ADAPTER = Path().adapter()  # unbound: the routes' adapter, before a path binds it


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(ADAPTER.name, DECLARED, ADAPTER.requests, ADAPTER.authored, _build)
