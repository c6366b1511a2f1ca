"""What every route shares for the life of the process."""

from __future__ import annotations

from dataclasses import dataclass, field

import structlog

from gateway.audit.bus import AuditBus
from gateway.config import Config
from gateway.guard.history import HistoryCache
from gateway.judge import JudgeService
from gateway.metrics.registry import GatewayMetrics
from gateway.policy.holder import PolicyHolder
from gateway.protocols.grown import GrownBodies
from gateway.state.base import StateStore
from gateway.upstream.base import Upstream
from gateway.upstream.headers import request_headers


@dataclass(slots=True)
class Gateway:
    config: Config
    upstream: Upstream
    policies: PolicyHolder
    store: StateStore
    log: structlog.typing.FilteringBoundLogger
    audit: AuditBus = field(default_factory=AuditBus)  # loop_intervention events -> sinks
    metrics: GatewayMetrics = field(default_factory=GatewayMetrics)  # this app's own registry
    history: HistoryCache = field(default_factory=HistoryCache)  # parse only what is new
    bodies: GrownBodies = field(default_factory=GrownBodies)  # read only what is new
    # Upstreams of protocols served by another provider (adapter name -> upstream); the rest
    # go to ``upstream``.
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    # The optional model judge (detectors.llm_judge); None: no policy can ask it.
    judge: JudgeService | None = None

    def upstream_for(self, protocol: str) -> Upstream:
        return self.upstreams.get(protocol, self.upstream)

    def forward_headers(self, client: list[tuple[bytes, bytes]], identity: bool,
                        protocol: str = "chat") -> list[tuple[bytes, bytes]]:
        up = self.config.upstream
        if protocol == "anthropic":
            return anthropic_headers(client, up.anthropic_api_key, identity)
        return request_headers(client, up.headers, up.api_key, identity)


def anthropic_headers(client: list[tuple[bytes, bytes]], api_key: str | None,
                      identity: bool) -> list[tuple[bytes, bytes]]:
    """Client headers for the Anthropic API (x-api-key, anthropic-version, anthropic-beta
    untouched). A server-side key is sent as x-api-key and replaces the client's credentials,
    Authorization included: neither goes to the provider next to the operator's key."""
    if not api_key:
        return request_headers(client, {}, None, identity)
    out = request_headers(client, {"x-api-key": api_key}, None, identity)
    return [(k, v) for k, v in out if k != b"authorization"]


def upstream_path(path: str) -> str:
    """Clients may use base URLs with or without /v1; the upstream base URL carries its own."""
    path = path.lstrip("/")
    return path[3:] if path.startswith("v1/") else path
