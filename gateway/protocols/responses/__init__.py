"""The OpenAI Responses API (``POST /v1/responses``), as a guarded protocol (``protocol``)."""
