"""The gateway as a chat completions client of its own (the model judge): the question it
sends and what it reads back. The judge's model is any OpenAI-compatible endpoint."""

from __future__ import annotations

from typing import Any

from gateway.protocols.chat.answers import answer as answer_of
from gateway.protocols.chat.protocol import DECLARED
from gateway.wire import codec


def question(model: str, system: str, user: str, max_tokens: int) -> bytes:
    """A one-shot, unstreamed completion request: a system prompt and one user message."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    return codec.dumps({"model": model, "messages": messages, "max_tokens": max_tokens, "stream": False})


def key_header(key: str) -> tuple[bytes, bytes]:
    """The header carrying the judge's own key, as the protocol's upstream declares it."""
    spec = DECLARED.upstream
    return spec.key_header.encode("latin-1"), (spec.key_prefix + key).encode("latin-1")


def reply(body: bytes) -> tuple[str | None, int, int]:
    """(the answer's text or None when it holds none, prompt tokens, completion tokens)."""
    data = codec.loads(body)
    if not isinstance(data, dict):
        return None, 0, 0
    usage = data.get("usage")
    answer = answer_of(data)
    text = answer.text if answer is not None else None
    return text, _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")


def _tokens(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and value >= 0 else 0
