"""LoopGuard's own parts for a guardrail instance: the policy (hot-reloaded), the state store
(memory, or Redis through LoopGuard's ``state`` config), the audit bus with its savings sink."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import structlog

from gateway.audit.bus import AuditBus, build_bus
from gateway.config import Config, load_config
from gateway.detectors import REGISTRY as DETECTORS
from gateway.metrics.live_savings import add_savings
from gateway.metrics.registry import GatewayMetrics, MetricsSink
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import shipped_policy_path
from gateway.pricing import configured
from gateway.state import build_store
from gateway.state.base import StateStore


def policy_path(ref: str | None) -> Path | None:
    """A policy file, or the name of a shipped pack (default, shadow, warn-only, strict, ...)."""
    if not ref:
        return None
    path = Path(ref)
    if path.is_file() or path.suffix in (".yaml", ".yml") or "/" in ref:
        return path
    return shipped_policy_path(ref)


_METRICS: list[GatewayMetrics] = []


def shared_metrics() -> GatewayMetrics:
    """LoopGuard's counters in prometheus_client's default registry, which LiteLLM's ``/metrics``
    serves (``callbacks: ["prometheus"]``). One set per process: LiteLLM may build a guardrail
    more than once, and a registry takes each metric name once."""
    if not _METRICS:
        from prometheus_client import REGISTRY

        metrics = GatewayMetrics(REGISTRY)
        metrics.start_at_zero(DETECTORS)  # LiteLLM serves no latency of ours: no routes
        _METRICS.append(metrics)
    return _METRICS[0]


_WATCHED: list[Runtime] = []


def watch_once(runtime: Runtime) -> None:
    """The scrape-time values (fail-opens, detector and audit sink errors, state, policy) of the
    first guardrail built in this process: the registry takes each metric name once."""
    if not _WATCHED:
        _WATCHED.append(runtime)
        runtime.metrics.watch(runtime)


@dataclass
class Runtime:
    config: Config
    policies: PolicyHolder
    store: StateStore
    audit: AuditBus
    metrics: GatewayMetrics
    log: Any = field(default_factory=lambda: structlog.get_logger("loopguard"))
    _started: bool = False
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    @classmethod
    def build(cls, policy: str | None = None, config_path: str | None = None) -> Runtime:
        """A bad policy or config file raises here, so the proxy refuses to start with it."""
        config = load_config(config_path)
        path = policy_path(policy) or (Path(config.policy) if config.policy else None)
        metrics = shared_metrics()
        audit = build_bus(config.audit)
        add_savings(audit, metrics, configured(config.pricing))
        audit.add(MetricsSink(metrics))
        runtime = cls(config, PolicyHolder(path), build_store(config.state), audit, metrics)
        watch_once(runtime)
        return runtime

    async def ensure_started(self) -> None:
        """Starts the policy watcher and the audit sinks on the proxy's event loop, on the first
        call (the proxy offers guardrails no startup hook)."""
        if self._started:
            return
        self._started = True
        self._tasks.append(asyncio.create_task(self.policies.watch(), name="loopguard-policy-watch"))
        await self.audit.start()
