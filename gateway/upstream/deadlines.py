"""How long the gateway waits for an upstream, the same for every transport.

- ``upstream.timeout_s`` bounds a JSON answer whole: connecting, the headers and the body read
  by one deadline set when the request is sent (504 beyond it). A slow body that trickles bytes
  cannot hold a request longer than that.
- A stream gets the same deadline for its first byte (the response headers), then each chunk
  must come within ``upstream.stream_idle_timeout_s`` (``timeout_s`` when unset) of the one
  before: a model may stream for longer than any whole-request bound, but an upstream that
  stalls mid-stream is given up on, and the stream ended with its protocol's error event.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from gateway.config import UpstreamConfig


@dataclass(frozen=True, slots=True)
class Timing:
    timeout_s: float
    idle_s: float

    @classmethod
    def of(cls, config: UpstreamConfig) -> Timing:
        idle = config.stream_idle_timeout_s
        return cls(config.timeout_s, idle if idle is not None else config.timeout_s)

    def deadline(self) -> float:
        """The whole response's deadline, on the running loop's clock."""
        return asyncio.get_running_loop().time() + self.timeout_s
