"""What every route shares for the life of the process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import structlog

from gateway.audit.bus import AuditBus
from gateway.config import Config
from gateway.fleet.service import Fleet
from gateway.guard.history import HistoryCache
from gateway.judge import JudgeService
from gateway.metrics.registry import GatewayMetrics
from gateway.policy.holder import PolicyHolder
from gateway.protocols.declaration import UpstreamSpec
from gateway.protocols.grown import GrownBodies
from gateway.protocols.registry import DEFAULT, Protocols, build
from gateway.state.base import StateStore
from gateway.upstream.base import Upstream
from gateway.upstream.headers import HeaderRules
from gateway.wire.credentials import without_parameters


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
    # This app's protocol adapters, with what they remember between the calls of an exchange.
    protocols: Protocols = field(default_factory=build)
    # Upstreams of protocols served by another provider (adapter name -> upstream); the rest
    # go to ``upstream``.
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    # The optional model judge (detectors.llm_judge); None: no policy can ask it.
    judge: JudgeService | None = None
    # The fleet view (gateway/fleet): remote tools' health across sessions, stopped loops
    # recalled; None when ``fleet.enabled`` is off.
    fleet: Fleet | None = None
    # What each upstream's requests carry (``forward_headers``), worked out on first use: the
    # configuration does not change while the process runs.
    _header_rules: dict[tuple[UpstreamSpec, bool], HeaderRules] = field(default_factory=dict)

    def upstream_for(self, protocol: str) -> Upstream:
        return self.upstreams.get(protocol, self.upstream)

    def forward_headers(
        self, client: list[tuple[bytes, bytes]], identity: bool, spec: UpstreamSpec | None = None
    ) -> list[tuple[bytes, bytes]]:
        """The client's headers for the upstream of ``spec`` (None: the default upstream)."""
        spec = spec or DEFAULT.declared.upstream
        rules = self._header_rules.get((spec, identity))
        if rules is None:
            up = self.config.upstream
            if spec.config is None:  # the default upstream: its configured extra headers too
                rules = header_rules(spec, up.api_key, identity, up.headers)
            else:
                rules = header_rules(spec, up.setting(spec.config, "api_key"), identity)
            self._header_rules[(spec, identity)] = rules
        return rules.apply(client)

    def forward_query(self, query: bytes, spec: UpstreamSpec | None = None) -> bytes:
        if spec is None or spec.config is None:
            return query
        return forward_query(query, spec, self.config.upstream.setting(spec.config, "api_key"))


def header_rules(
    spec: UpstreamSpec, api_key: str | None, identity: bool, extra: dict[str, str] | None = None
) -> HeaderRules:
    """What goes upstream of a provider's API from a client's headers (its version and beta
    headers untouched; ``HeaderRules.apply``). A server-side key is sent the provider's way
    (``spec.key_header``) and replaces every credential the client sent: none goes to the
    provider next to the operator's key."""
    key = None
    if api_key:
        key = (spec.key_header.encode("latin-1"), (spec.key_prefix + api_key).encode("latin-1"))
    credentials = (name.encode("latin-1") for name in spec.credentials)
    return HeaderRules(extra or {}, identity, key, credentials)


def forward_query(query: bytes, spec: UpstreamSpec, api_key: str | None) -> bytes:
    """The client's query string for the upstream: a server-side key replaces a key the client
    put in the query (``spec.credential_query``), which is then left out, however it is spelt:
    Google reads ``key``, ``$key`` and ``%6Bey`` as one parameter."""
    if not api_key or not spec.credential_query or not query:
        return query
    return without_parameters(query, frozenset(name.encode("latin-1") for name in spec.credential_query))


def path_for_upstream(scope: Mapping[str, Any], spec: UpstreamSpec | None = None) -> str:
    """``upstream_path`` of a request: its canonical raw path (``server/paths.py``), escapes
    kept as the client spelt them (an ARN's ``%2F``, boto3's ``%3A``), never decoded here. It is
    the path the route was chosen by, decoded once: the upstream, which decodes once, routes
    the same path, and a signature covers the URL exactly as it is sent (the transports send
    it unchanged). A scope that never passed the path gate (none does in service) is encoded
    from its decoded path."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else quote(scope["path"], safe="/:@!$&'()*+,;=")
    return upstream_path(path, spec)


def upstream_path(path: str, spec: UpstreamSpec | None = None) -> str:
    """Clients may use base URLs with or without /v1; the upstream base URL carries its own
    (a protocol whose paths name their version, ``strip_v1=False``, sends the path whole). A
    protocol served under a prefix of the gateway's (``UpstreamSpec.mount``) sends the path
    below it."""
    if spec is not None and spec.mount and path.startswith(spec.mount):
        path = path[len(spec.mount) :]
    if spec is not None and not spec.strip_v1:
        return path
    path = path.lstrip("/")
    return path[3:] if path.startswith("v1/") else path
