"""The Gemini API (``generateContent`` / ``streamGenerateContent``) as a guarded protocol.

The model and whether the reply streams are in the path (``/v1beta/models/{model}:
streamGenerateContent?alt=sse``), not the body: ``at`` binds an adapter to them per request
(``Path``). A stream asked for without ``alt=sse`` is a JSON array, not events: it is read whole
and judged like a unary reply (its chunks merged into one answer); an untouched one is relayed
byte for byte, an edited or terminated one is answered with a one-element array. Which shape
a reply is judged in is the reply's own (the pipeline reads its content type, the replies read
an object or an array alike); the binding decides only what the gateway writes before any reply. Items are the
request's ``contents``; ``systemInstruction`` is read as the system prompt. Every request
carries its whole conversation: no history role, no memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gateway.protocols.base import Judge, StreamOptions
from gateway.protocols.bound import Bound
from gateway.protocols.declaration import Declaration, Owned, UpstreamSpec, answer_name
from gateway.protocols.gemini import parse, query, replies, rewrite, stream, tokens
from gateway.protocols.roles import Adapter, Authored, Kind, Requests, Streams
from gateway.protocols.sse import data_event

__all__ = ["ADAPTER", "KIND", "Path"]

_STREAMING = "streamGenerateContent"
_VERSIONS = ("v1beta", "v1alpha")  # under /v1 the gateway's paths are OpenAI's, but a model's methods

# What the Gemini API keeps per project, by resource name (``cachedContents/abc``): read,
# listed and used by name, so each is checked against the caller's tenant.
OWNED = tuple(
    Owned(kind, called, "not_found", f"/{version}/{resource}", creates, fields=fields, resource=resource)
    for version in _VERSIONS
    for kind, called, resource, creates, fields in (
        ("cached_content", "Cached content", "cachedContents", answer_name, ("cachedContent",)),
        ("gemini_file", "File", "files", lambda a: answer_name(a, "file.name") or answer_name(a), ("fileUri",)),
        ("tuned_model", "Tuned model", "tunedModels", lambda a: answer_name(a, "metadata.tunedModel"), ()),
        ("gemini_batch", "Batch", "batches", None, ()),
        ("corpus", "Corpus", "corpora", answer_name, ()),
        ("file_search_store", "File search store", "fileSearchStores", answer_name, ("fileSearchStoreNames",)),
    )
)
# Its routes that keep nothing: model lists, token counts, embeddings.
STATELESS = (
    *(f"GET /{version}/models" for version in _VERSIONS),
    *(f"GET /{version}/models/{{model}}" for version in _VERSIONS),
    *(
        f"POST /{version}/models/{{model}}:{method}"
        for version in ("v1", *_VERSIONS)
        for method in ("countTokens", "embedContent", "batchEmbedContents")
    ),
)

DECLARED = Declaration(
    family="gemini.generate_content",
    # Every version's generate methods, on each resource the API generates with: base and
    # tuned models, and ``dynamic/{id}`` (a model the API names for the caller).
    routes=tuple(
        f"/{version}/{models}/{{model}}:{method}"
        for version in ("v1beta", "v1", "v1alpha")
        for models in ("models", "tunedModels", "dynamic")
        for method in ("generateContent", _STREAMING)
    ),
    # The API root, as the SDKs' base URL; paths name their version. The key goes as
    # x-goog-api-key, or the client's ``?key=``, which a server key replaces.
    upstream=UpstreamSpec(
        config="gemini",
        default_base_url="https://generativelanguage.googleapis.com",
        key_header="x-goog-api-key",
        key_prefix="",
        credentials=("x-goog-api-key", "authorization"),
        credential_query=("key",),
        strip_v1=False,
    ),
    # Its other paths (countTokens, files, caches, ...); under /v1 only a model's methods:
    # the rest of /v1/models is OpenAI's (GET /v1/models/ft:gpt-4o:org:id).
    relays=("/v1beta/{rest:path}", "POST /v1/models/{model}:{method}"),
    id_fields=frozenset({"id"}),
    auth_error_type="authentication_error",
    reads=lambda body: isinstance(body.get("contents"), list) and bool(body["contents"]),
    stream_notes=False,  # google-genai reads a comment line as a JSON chunk
    owned=OWNED,
    stateless=STATELESS,
)


@dataclass(frozen=True, slots=True)
class Path(Bound):
    """What one request's path says: its model, and how the reply comes (``streaming``: SSE
    events; ``array``: a stream without ``alt=sse``, one JSON array)."""

    array: bool = False

    def termination_reply(self, text: str, payload: dict[str, Any]) -> Any:
        reply = replies.termination(text, self.model)
        return [reply] if self.array else reply

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return [stream.event(replies.termination(text, self.model))]

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> stream.GeminiStreamFilter:
        return stream.GeminiStreamFilter(judge, options, self.model)

    def adapter(self) -> Adapter:
        """The adapter for requests on this path."""
        requests = Requests(
            items_field="contents",
            payload_fields=("systemInstruction", "tools"),
            items=parse.contents_of,
            conversation=parse.conversation,
            with_items=rewrite.with_contents,
            stream=self.streams,
            model=self.model_of,
            user=_no_user,
            item_text=tokens.item_text,
        )
        authored = Authored(self.termination_reply, self.termination_stream, replies.error_body, data_event)
        streams = Streams(self.stream_filter, stream.stream_answer, stream.stream_prepend_text)
        return Adapter("gemini", DECLARED, requests, rewrite.EDITS, replies.REPLIES, streams, authored, binds=at)


def _no_user(payload: dict[str, Any]) -> str | None:
    return None  # the Gemini API names no end user


def at(scope: dict[str, Any]) -> Adapter:
    """The adapter bound to the request's path (its model, and how its reply comes: ``alt``
    read as Google reads it, ``query.reply_format``)."""
    name, _, method = scope["path"].rpartition("/")[2].rpartition(":")  # the verb: after the last ":"
    streaming = method == _STREAMING
    if streaming and query.reply_format(scope.get("query_string", b"")) != "sse":
        return Path(name, array=True).adapter()
    return Path(name, streaming).adapter()


ADAPTER = Path().adapter()  # unbound: the routes' adapter, before a path binds it


def _build() -> Adapter:
    return ADAPTER


KIND = Kind(ADAPTER.name, DECLARED, ADAPTER.requests, ADAPTER.authored, _build)
