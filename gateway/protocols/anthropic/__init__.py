"""The Anthropic Messages API (``POST /v1/messages``), as a protocol adapter."""

from gateway.protocols.anthropic.adapter import AnthropicAdapter

__all__ = ["AnthropicAdapter"]
