"""The OpenAI Responses API adapter (``POST /v1/responses``): ``adapter.RESPONSES``."""
