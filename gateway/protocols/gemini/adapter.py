"""The Gemini API (``generateContent`` / ``streamGenerateContent``) as a pipeline adapter.

The model and whether the reply streams are in the path (``/v1beta/models/{model}:
streamGenerateContent?alt=sse``), not the body: ``at`` binds an adapter to them per request. A
stream asked for without ``alt=sse`` is a JSON array, not events: it is read whole and judged
like a unary reply (its chunks merged into one answer); an untouched one is relayed byte for
byte, an edited or terminated one is answered with a one-element array.
Items are the request's ``contents``; ``systemInstruction`` is read as the system prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gateway.protocols import usage
from gateway.protocols.adapters import WholeConversations
from gateway.protocols.base import Answer, ItemText, Judge, StreamOptions
from gateway.protocols.declaration import Declaration, UpstreamSpec
from gateway.protocols.gemini import parse, replies, rewrite, stream, tokens
from gateway.protocols.sse import data_event
from gateway.trace.model import Conversation, ToolCall

__all__ = ["GEMINI", "GeminiAdapter"]

_STREAMING = ":streamGenerateContent"


class GeminiAdapter(WholeConversations):
    name = "gemini"
    items_field = "contents"  # see Adapter.items_field
    reply_types: tuple[type, ...] = (dict,)  # see Adapter.reply_types; an array stream's: list
    payload_fields = ("systemInstruction", "tools")  # see Adapter.payload_fields
    declared = Declaration(
        family="gemini.generate_content",
        routes=tuple(
            f"/{version}/models/{{model}}:{method}"
            for version in ("v1beta", "v1")
            for method in ("generateContent", "streamGenerateContent")
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
    )

    def __init__(self, model: str = "", streaming: bool = False, array: bool = False) -> None:
        # ``array``: streamed as a JSON array (no ``alt=sse``): read whole and judged like a
        # unary reply; an edited one goes out as a one-element array.
        self._model, self._streaming, self._array = model, streaming, array
        if array:
            self.reply_types = (list,)

    def at(self, scope: dict[str, Any]) -> GeminiAdapter:
        name, _, method = scope["path"].rpartition("/")[2].partition(":")
        streaming = method == _STREAMING[1:]
        if streaming and b"alt=sse" not in scope.get("query_string", b"").split(b"&"):
            return GeminiAdapter(name, array=True)
        return GeminiAdapter(name, streaming)

    # --- the request ----------------------------------------------------------------------

    def items(self, payload: dict[str, Any]) -> list[Any]:
        return parse.contents_of(payload)

    def conversation(self, payload: dict[str, Any], items: list[Any], start: int = 0) -> Conversation:
        return parse.conversation(payload, items, start)

    def with_items(
        self, payload: dict[str, Any], items: list[Any], history: int = 0, namespace: str = ""
    ) -> dict[str, Any]:
        return rewrite.with_contents(payload, items)

    def stream(self, payload: dict[str, Any]) -> bool:
        return self._streaming

    def model(self, payload: dict[str, Any]) -> str:
        return self._model

    def user(self, payload: dict[str, Any]) -> str | None:
        return None  # the Gemini API names no end user

    # --- interventions on the request ------------------------------------------------------

    def add_anchor(self, items: list[Any], text: str, placement: str) -> list[Any]:
        return rewrite.add_anchor(items, text, placement)

    def result_index(self, items: list[Any], call_id: str, after: int) -> int | None:
        return rewrite.result_index(items, call_id, after)

    def replace_result(self, items: list[Any], index: int, text: str, call_id: str) -> list[Any]:
        return rewrite.replace_result(items, index, text, call_id)

    def veto_exchange(self, call: ToolCall, observation: str) -> list[Any]:
        return rewrite.veto_exchange(call, observation)

    def corrective(self, answer: str, text: str) -> list[Any]:
        return rewrite.corrective(answer, text)

    # --- the reply (candidates are alternative answers) ---------------------------------------

    # An array stream's reply is read as its chunks merged (``replies.whole``), and an edited
    # one is written back in the shape it came in (``replies.shaped``).

    def proposed_calls(self, reply: dict[str, Any]) -> list[tuple[ToolCall, ...]]:
        return replies.proposed_calls(replies.whole(reply))

    def keep_calls(self, reply: dict[str, Any], keep: Sequence[int]) -> dict[str, Any]:
        return replies.shaped(reply, replies.keep_calls(replies.whole(reply), keep))

    def answer(self, reply: dict[str, Any]) -> Answer | None:
        return replies.answer(replies.whole(reply))

    def prepend_text(self, reply: dict[str, Any], text: str) -> dict[str, Any]:
        return replies.shaped(reply, replies.prepend_text(replies.whole(reply), text))

    def stream_filter(
        self, judge: Judge, payload: dict[str, Any], options: StreamOptions | None = None
    ) -> stream.GeminiStreamFilter:
        return stream.GeminiStreamFilter(judge, options, self._model)

    def stream_answer(self, stream_bytes: bytes) -> Answer | None:
        return stream.stream_answer(stream_bytes)

    def stream_prepend_text(self, stream_bytes: bytes, text: str) -> bytes:
        return stream.stream_prepend_text(stream_bytes, text)

    # --- replies the gateway writes ---------------------------------------------------------

    def termination_reply(self, text: str, payload: dict[str, Any]) -> Any:
        reply = replies.termination(text, self._model)
        return [reply] if self._array else reply

    def termination_stream(self, text: str, payload: dict[str, Any]) -> list[bytes]:
        return [stream.event(replies.termination(text, self._model))]

    def error_body(self, message: str, type: str, code: str | None = None) -> dict[str, Any]:
        return replies.error_body(message, type, code)

    def error_event(self, body: dict[str, Any]) -> bytes:
        return data_event(body)

    def without_tools(self, payload: dict[str, Any]) -> dict[str, Any]:
        return rewrite.without_tools(payload)

    def item_text(self, item: Any) -> ItemText:
        return tokens.item_text(item)

    def output_tokens(self, answer: bytes) -> int | None:
        return usage.reported(answer, ("usageMetadata", "candidatesTokenCount"))


GEMINI = GeminiAdapter()
