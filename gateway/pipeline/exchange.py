"""One request in flight: what the client asked, what the guard planned, and where it stands.

Stages read and update this object; it holds state only. Timing lives in ``timing.Clock``, the
actions taken in ``verdict.Verdict``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from gateway.context import Gateway
from gateway.guard.expectation import TurnGuard
from gateway.guard.plan import RequestPlan
from gateway.pipeline.request_log import Clock
from gateway.pipeline.verdict import Verdict
from gateway.policy.actions import Action
from gateway.protocols.base import StreamOptions
from gateway.protocols.grown import appended
from gateway.protocols.roles import Adapter
from gateway.upstream.base import Upstream, UpstreamRequest
from gateway.wire import codec


@lru_cache(maxsize=16)
def _options(fast_paths: bool, keepalive_s: float) -> StreamOptions:
    """The stream filters' options of the ``streaming`` settings, built once per setting."""
    return StreamOptions(keepalive_s=keepalive_s, fast_paths=fast_paths)


@dataclass(slots=True)
class Exchange:
    gateway: Gateway
    adapter: Adapter
    request_id: str
    path: str
    payload: dict[str, Any]
    body: bytes  # exactly what the client sent
    stream: bool
    upstream: Upstream  # where this protocol's requests go (``Gateway.upstream_for``)
    outgoing: UpstreamRequest
    log: Any
    clock: Clock
    verdict: Verdict = field(default_factory=Verdict)
    plan: RequestPlan | None = None  # None: not judged (the guard failed open): forwarded untouched
    history: list[Any] = field(default_factory=list)  # entries the adapter supplied (``History.history``)
    namespace: str = ""  # the client's (``client_namespace``): server-side chains are kept per client
    expectation: TurnGuard | None = None  # the turn's required tool, while still pending
    reasks: int = 0
    resent: int = 0  # requests the gateway made itself after the client's (re-asks, retries, the final answer)
    reply: dict[str, Any] | None = None  # the reply that reached the client, when it was read
    items_end: int | None = None  # where the client's last item ends in ``body``, when known
    ending: str | None = None  # a stream ended with the protocol's error events: which (logged)

    def sent_payload(self) -> dict[str, Any]:
        """The body the upstream gets now: the client's, with what the model must see."""
        assert self.plan is not None
        return self.payload_with(self.plan.messages)

    def payload_with(self, items: list[Any]) -> dict[str, Any]:
        """The client's payload carrying ``items``; a server-side chain's entries that are
        unchanged at their head are not sent again."""
        earlier = self.history
        kept = (
            len(earlier)
            if len(items) >= len(earlier) and all(a is b for a, b in zip(items, earlier, strict=False))
            else 0
        )
        return self.adapter.outgoing(self.payload, items, kept, self.namespace)

    def stream_options(self) -> StreamOptions:
        """How this request's stream filter runs (``streaming`` in the config). A conversation
        already at warn level or above holds each round's text until its calls are judged, so a
        refused round's words never reach the client (the stream then reads like the reply)."""
        streaming = self.gateway.config.streaming
        options = _options(streaming.fast_paths, streaming.keepalive_s)
        plan = self.plan
        if plan is not None and plan.judgement.action >= Action.WARN:
            return replace(options, hold_text=True)
        return options

    def sent_body(self) -> bytes:
        sent = self.sent_payload()
        written = appended(self.body, self.items_end, self.payload, sent, self.adapter.requests.items_field)
        return written if written is not None else codec.dumps(sent)


def new_request_id(headers: Mapping[str, str]) -> str:
    return headers.get("x-request-id") or os.urandom(16).hex()  # a uuid4's randomness, without the object
