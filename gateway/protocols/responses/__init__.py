"""The OpenAI Responses API adapter (``POST /v1/responses``)."""

from gateway.protocols.responses.adapter import ResponsesAdapter

__all__ = ["ResponsesAdapter"]
