"""What a request's path says when the path, not the body, names the model and whether the
reply streams (Google's ``models/{m}:streamGenerateContent``, Bedrock's
``model/{m}/invoke-with-response-stream``, Vertex's ``:streamRawPredict``).

Such a protocol binds an adapter to each request's path (``Adapter.binds``): its ``Path`` class
extends ``Bound`` with the roles' functions that need the path's facts (the termination reply
naming the model, the stream filter), and reads the model and streaming from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Bound:
    model: str = ""
    streaming: bool = False

    def streams(self, payload: dict[str, Any]) -> bool:
        """``Requests.stream``: the path's, whatever the body says."""
        return self.streaming

    def model_of(self, payload: dict[str, Any]) -> str:
        """``Requests.model``: the path's."""
        return self.model
