"""Synthetic ``chat.completion.chunk`` objects that fit into an upstream's stream.

The openai SDK requires ``id``, ``object``, ``created``, ``model`` and ``choices`` on every chunk,
so everything the gateway writes into a stream carries the envelope of the stream it joins.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Envelope",
    "content_chunk",
    "finish_chunk",
    "new_completion_id",
    "role_chunk",
    "usage_chunk",
]

CHUNK_OBJECT = "chat.completion.chunk"


def new_completion_id() -> str:
    return f"chatcmpl-loopguard-{secrets.token_hex(12)}"


@dataclass(frozen=True, slots=True)
class Envelope:
    id: str
    created: int
    model: str
    system_fingerprint: str | None = None

    @classmethod
    def new(cls, model: str) -> Envelope:
        """For replies the gateway writes on its own (no upstream chunk to borrow from)."""
        return cls(id=new_completion_id(), created=int(time.time()), model=model)

    @classmethod
    def from_chunk(cls, chunk: dict[str, Any]) -> Envelope:
        created = chunk.get("created")
        fingerprint = chunk.get("system_fingerprint")
        return cls(
            id=str(chunk.get("id") or new_completion_id()),
            created=created if isinstance(created, int) else int(time.time()),
            model=str(chunk.get("model") or ""),
            system_fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        )

    def chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "object": CHUNK_OBJECT,
            "created": self.created,
            "model": self.model,
        }
        if self.system_fingerprint is not None:
            body["system_fingerprint"] = self.system_fingerprint
        body["choices"] = choices
        body.update(extra)
        return body


def choice(delta: dict[str, Any], finish_reason: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"index": index, "delta": delta, "logprobs": None, "finish_reason": finish_reason}


def role_chunk(env: Envelope, index: int = 0) -> dict[str, Any]:
    return env.chunk([choice({"role": "assistant", "content": ""}, index=index)])


def content_chunk(env: Envelope, text: str, *, role: bool = False, index: int = 0) -> dict[str, Any]:
    """A content delta; ``role=True`` when it opens the stream (nothing was sent before it)."""
    delta: dict[str, Any] = {"role": "assistant", "content": text} if role else {"content": text}
    return env.chunk([choice(delta, index=index)])


def finish_chunk(env: Envelope, reason: str = "stop", index: int = 0, **extra: Any) -> dict[str, Any]:
    return env.chunk([choice({}, reason, index=index)], **extra)


def usage_chunk(env: Envelope, usage: dict[str, Any]) -> dict[str, Any]:
    return env.chunk([], usage=usage)
