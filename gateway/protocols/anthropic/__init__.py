"""The Anthropic Messages API (``POST /v1/messages``), as a guarded protocol (``protocol``)."""
