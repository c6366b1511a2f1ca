"""The ASGI application: the front (gates, guarded routes), the other routes, the shared context."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import structlog
from starlette.applications import Starlette
from starlette.routing import Route

from gateway.audit.bus import build_bus
from gateway.config import Config, ConfigError, UpstreamConfig
from gateway.console import console
from gateway.context import Gateway
from gateway.detectors import REGISTRY as DETECTORS
from gateway.fleet.service import Fleet
from gateway.guard.history import HistoryCache
from gateway.judge import JudgeService
from gateway.metrics.endpoint import metrics_endpoint
from gateway.metrics.live_savings import add_savings
from gateway.metrics.registry import GatewayMetrics, MetricsSink
from gateway.pipeline.route import Guarded
from gateway.policy.holder import PolicyHolder
from gateway.pricing import configured
from gateway.protocols import registry
from gateway.protocols.declaration import UpstreamSpec
from gateway.protocols.grown import GrownBodies
from gateway.protocols.registry import KINDS, PATTERNS, relay_route
from gateway.server import object_paths
from gateway.server.auth import ClientAuth
from gateway.server.front import ASGIApp, Front
from gateway.server.health import healthz, readyz
from gateway.server.idle import give_back_when_idle
from gateway.server.passthrough import passthrough_for
from gateway.server.paths import GuardedSpellings, PathGuard
from gateway.server.unjudged import UnjudgedCalls
from gateway.state import build_fleet, build_store, claims
from gateway.state.base import StateStore
from gateway.upstream.base import Upstream
from gateway.upstream.build import build_upstream
from gateway.upstream.signing import ProviderSettings, SignedUpstream, Signer
from gateway.upstream.unset import Unset

_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]

# How the ASGI server must run the app (used by `loopguard serve` and the test harness).
# Relayed responses carry the upstream's own Date and Server headers (end-to-end, relayed
# unchanged); uvicorn would add a second of each, and two Date headers read as "date, date".
SERVER_OPTIONS = {"server_header": False, "date_header": False}


def build_app(
    config: Config,
    upstream: Upstream | None = None,
    policies: PolicyHolder | None = None,
    store: StateStore | None = None,
) -> GatewayApp:
    """``PolicyError`` from a bad policy file propagates: refusing to start is right then."""
    gateway = Gateway(
        config=config,
        upstream=upstream or build_upstream(config.upstream),
        policies=policies or PolicyHolder(config.policy),
        store=store or build_store(config.state),
        log=structlog.get_logger("loopguard"),
        audit=build_bus(config.audit),
        metrics=GatewayMetrics(),
        history=HistoryCache(max_bytes=config.limits.history_cache_bytes),
        bodies=GrownBodies(max_bytes=config.limits.history_cache_bytes),
        upstreams=provider_upstreams(config),
        protocols=registry.build(),  # this app's own adapters: their memory is its alone
    )
    gateway.judge = judge = JudgeService(gateway.upstream, config.upstream, gateway.store, gateway.metrics)
    if config.fleet.enabled:  # tools down across sessions, stopped loops recalled (gateway/fleet)
        gateway.fleet = Fleet(config.fleet, build_fleet(gateway.store), gateway.audit, gateway.log)
    ui = console(gateway)  # the operator console's sink and routes (/ui), before savings: it shows them
    # prices reject/terminate off the request path
    add_savings(gateway.audit, gateway.metrics, configured(config.pricing))
    gateway.audit.add(MetricsSink(gateway.metrics))  # interventions counted from the audit events
    gateway.metrics.watch(gateway)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        watcher = asyncio.create_task(gateway.policies.watch())
        idle = asyncio.create_task(give_back_when_idle(gateway, front, config.state.ttl_s))
        await gateway.audit.start()
        try:
            yield
        finally:
            await gateway.audit.stop()
            await judge.aclose()
            for task in (watcher, idle):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await gateway.upstream.aclose()
            for other in gateway.upstreams.values():
                await other.aclose()
            await gateway.store.aclose()

    # Guarded protocols: one adapter each (this app's), one pipeline for all (gateway/pipeline).
    # The protocols' other paths (relayed to their own upstreams, errors in their shape) come
    # before every other /v1/* route (relayed to the default upstream).
    routes = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
        *ui,
        # Routes naming a tenant's stored objects: checked against the caller's tenant (first:
        # Anthropic's message batches lie under its relayed /v1/messages/...).
        *(route for adapter in gateway.protocols.adapters for route in object_paths.routes(adapter, _ALL_METHODS)),
        *(
            Route(path, passthrough_for(adapter), methods=methods or _ALL_METHODS)
            for adapter in gateway.protocols.adapters
            for path, methods in map(relay_route, adapter.declared.relays)
        ),
        Route("/v1/{rest:path}", passthrough_for(), methods=_ALL_METHODS),
    ]
    others = Starlette(routes=routes, lifespan=lifespan)
    # Guarded protocols: one adapter each, one pipeline for all (gateway/pipeline). A request
    # its adapter does not guard (``Adapter.at``) goes on to the other routes.
    guarded: dict[str, ASGIApp] = {
        path: Guarded(adapter, gateway, others)
        for adapter in gateway.protocols.adapters
        for path in adapter.declared.routes
        if "{" not in path
    }
    patterns = tuple((regex, Guarded(gateway.protocols.named(k.name), gateway, others)) for regex, _, k in PATTERNS)
    gateway.metrics.start_at_zero(
        DETECTORS,
        {adapter.name for adapter in KINDS},
        [path for adapter in KINDS for path in adapter.declared.routes],
    )
    others.state.gateway = gateway
    # Paths and header values are made canonical before authentication, both before any route;
    # a guarded route is then reached only by its own spelling and methods, and a model call
    # no protocol judges not at all (unless the operator relays it).
    other_methods = {path: adapter.declared.other_methods for adapter in KINDS for path in adapter.declared.routes}
    gates = (
        PathGuard(),
        ClientAuth(config.auth),
        GuardedSpellings(
            guarded,
            other_methods,
            [pattern for _, pattern, _ in PATTERNS],
            [
                kind.collection
                for adapter in KINDS
                if claims.enforced(config, adapter.declared.upstream.config)
                for kind in adapter.declared.owned
                if kind.collection
            ],
        ),
        UnjudgedCalls(config.upstream),
    )
    front = Front(
        guarded,
        others,
        gates,
        gateway.metrics,
        config.limits.body_timeout_s,
        config.limits.max_inflight_bytes,
        patterns,
    )
    app = GatewayApp(front, others)
    if config.telemetry.enabled:  # OpenTelemetry is imported only then
        from gateway.telemetry import instrument, provider_for

        instrument(app, provider_for(config.telemetry))
    return app


def provider_upstreams(config: Config) -> dict[str, Upstream]:
    """An upstream per protocol served by another provider (``UpstreamSpec.config``), by adapter
    name. A provider key in the config that no protocol reads is refused: it is misspelt."""
    specs = {a.name: a.declared.upstream for a in KINDS if a.declared.upstream.config is not None}
    unclaimed = config.upstream.unclaimed({c: spec.settings for spec in specs.values() if (c := spec.config)})
    if unclaimed:
        keys = {f"{s.config}_{key}" for s in specs.values() for key in ("base_url", "api_key", *s.settings)}
        known = ", ".join(sorted(keys))
        raise ConfigError(
            "<config>",
            f"upstream.{unclaimed[0]}",
            f"no protocol reads it (known: {known})",
            tuple((f"upstream.{key}", "no protocol reads it") for key in unclaimed[1:]),
        )
    signers: dict[tuple[UpstreamSpec, str], Signer] = {}
    return {
        name: _upstream(config, specs[name], provider, signers) for name, provider in provider_configs(config).items()
    }


def _upstream(
    config: Config, spec: UpstreamSpec, provider: UpstreamConfig, signers: dict[tuple[UpstreamSpec, str], Signer]
) -> Upstream:
    """A provider's upstream; one that authenticates each request by its bytes signs each
    (``UpstreamSpec.signer``). Without a base URL (none set, none by default: Azure's resource)
    it answers each request with the error naming the setting. Protocols sharing a provider
    share its signer (``signers``): one set of credentials, one cached token."""
    if not provider.base_url:
        return Unset(f"upstream.{spec.config}_base_url")
    upstream = build_upstream(provider)
    if spec.signer is None or spec.config is None:
        return upstream
    signer = signers.get((spec, provider.base_url))
    if signer is None:
        up = config.upstream
        extra = {key: value for key in spec.settings if (value := up.setting(spec.config, key))}
        settings = ProviderSettings(
            spec.config,
            provider.base_url,
            up.setting(spec.config, "api_key"),
            extra,
            provider.connect_timeout_s,
            provider.timeout_s,
        )
        signer = signers[(spec, provider.base_url)] = spec.signer(settings)
    return SignedUpstream(upstream, signer, provider.base_url)


def provider_configs(config: Config, suffixed: bool = True) -> dict[str, UpstreamConfig]:
    """The upstream settings of each protocol served by another provider, by adapter name: its
    ``<provider>_base_url`` (env ``LOOPGUARD_<PROVIDER>_BASE_URL`` first, else the declared
    default), with the protocol's version suffix appended unless ``suffixed`` is False."""
    return {
        a.name: config.upstream.provider(spec.config, _default_url(config, spec), spec.root_suffix if suffixed else "")
        for a in KINDS
        if (spec := a.declared.upstream).config is not None
    }


def _default_url(config: Config, spec: UpstreamSpec) -> str:
    """The declared default base URL, or the one its settings make (a cloud's region)."""
    if spec.default_url is None or spec.config is None:
        return spec.default_base_url
    up = config.upstream
    return spec.default_url({key: value for key in spec.settings if (value := up.setting(spec.config, key))})


class GatewayApp:
    """What ``build_app`` returns: the front, with what operators and tests reach through it
    (``state.gateway``, the guarded routes, the lifespan) and room for an outermost wrapper."""

    def __init__(self, front: Front, others: Starlette) -> None:
        self.front, self.others = front, others
        self.state = others.state
        self._entry: Any = front

    @property
    def guarded(self) -> dict[str, Any]:
        """Exact path -> the ASGI app of its protocol (POST only)."""
        return self.front.guarded

    @property
    def routes(self) -> list[Any]:
        return self.others.routes

    @property
    def router(self) -> Any:
        return self.others.router

    def wrap(self, middleware: Any, **options: Any) -> None:
        """Run ``middleware`` outside everything else (tracing spans the whole request)."""
        self._entry = middleware(self._entry, **options)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self._entry(scope, receive, send)
