"""The protocols the guardrail guards, by LiteLLM's call type: the adapter that reads and writes
each one, the proxy route it stands for, the router method that asks the model again, and
LiteLLM's objects to and from the protocol's JSON.

LiteLLM passes its hooks ``acompletion`` for ``/v1/chat/completions``, ``aresponses`` for
``/v1/responses`` and ``anthropic_messages`` for ``/v1/messages``; every other call type (embeddings,
images, batches, ...) carries no agent loop and is let through.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.protocols.anthropic.protocol import KIND as ANTHROPIC_KIND
from gateway.protocols.chat.protocol import ADAPTER as CHAT
from gateway.protocols.responses.protocol import KIND as RESPONSES_KIND
from gateway.protocols.roles import Adapter


@dataclass(frozen=True, slots=True)
class Wire:
    adapter: Adapter
    path: str  # the route the gateway serves the same protocol on (policy path matching)
    router_call: str  # the proxy router's method for one more call of this protocol
    metadata_key: str  # where LiteLLM keeps the key's metadata in this route's request dict

    def reply(self, response: Any) -> dict[str, Any] | None:
        """A LiteLLM response as the protocol's JSON; None when it is not one."""
        if isinstance(response, dict):
            return response
        dump = getattr(response, "model_dump", None)
        return dump(exclude_none=True) if dump is not None else None

    def response(self, reply: dict[str, Any]) -> Any:
        """The protocol's JSON as the object LiteLLM returns for this route."""
        if self.adapter.name == "chat":
            from litellm import ModelResponse

            return ModelResponse(**reply)
        if self.adapter.name == "responses":
            from litellm.types.llms.openai import ResponsesAPIResponse

            return ResponsesAPIResponse(**reply)
        return reply  # Anthropic Messages: LiteLLM relays the dict

    def event(self, chunk: dict[str, Any]) -> bytes:
        """A stream chunk as the SSE event the protocol's stream filter reads."""
        data = orjson.dumps(chunk)
        if self.adapter.name == "responses":
            return b"event: " + str(chunk.get("type", "")).encode() + b"\ndata: " + data + b"\n\n"
        return b"data: " + data + b"\n\n"

    def chunk(self, data: dict[str, Any]) -> Any:
        """An event the filter wrote (a rewritten or new one) as LiteLLM's chunk object."""
        if self.adapter.name == "responses":
            # LiteLLM writes every event object out as its JSON: a generic event keeps them all
            from litellm.types.llms.openai import GenericEvent

            return GenericEvent(**data)
        from litellm.types.utils import ModelResponseStream

        return ModelResponseStream(**data)


class Wires:
    """One guardrail's wires. Each guardrail builds its own Responses and Anthropic adapters, whose
    memory (calls withheld from the client, chains and threads seen) is then its own, as each
    gateway app's is."""

    __slots__ = ("_by_call", "chat", "messages", "responses")

    def __init__(self) -> None:
        self.chat = Wire(CHAT, "/v1/chat/completions", "acompletion", "metadata")
        self.responses = Wire(RESPONSES_KIND.build(), "/v1/responses", "aresponses", "litellm_metadata")
        self.messages = Wire(ANTHROPIC_KIND.build(), "/v1/messages", "aanthropic_messages", "litellm_metadata")
        self._by_call = {
            "completion": self.chat,
            "acompletion": self.chat,
            "responses": self.responses,
            "aresponses": self.responses,
            "anthropic_messages": self.messages,
            "aanthropic_messages": self.messages,
        }

    def of(self, call_type: Any, data: dict[str, Any]) -> Wire | None:
        """The protocol of a request. The response hooks get no call type: the proxy's request
        URL tells, else the field the conversation is in."""
        if call_type is not None:
            return self._by_call.get(getattr(call_type, "value", call_type))
        server = data.get("proxy_server_request")
        url = str(server.get("url") or "") if isinstance(server, dict) else ""
        if url.split("?")[0].endswith("/messages"):
            return self.messages
        if url.split("?")[0].endswith("/responses") or "input" in data:
            return self.responses
        return self.chat if isinstance(data.get("messages"), list) else None
