"""Values owned elsewhere, read when Prometheus scrapes (never on the request path).

They are kept by each process: with ``server.workers`` > 1 a scrape reads the answering worker's
own (their help texts say so), next to the counters all workers share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from gateway.detectors import REGISTRY as DETECTORS

PER_WORKER = " (this process's own: with several workers, the answering worker's)"


class GatewayCollector(Collector):
    def __init__(self, gateway: Any, metrics: Any) -> None:
        self.gateway = gateway
        self.metrics = metrics

    def collect(self) -> Iterator[Metric]:
        yield from self._guard()
        yield from self._state()
        yield from self._policy()
        yield from self._audit()
        yield from self._inflight()
        yield from self._fleet()
        self.metrics.recovery.expire()  # settle quiet sessions so the outcome counters are current
        yield GaugeMetricFamily(
            "loopguard_warns_pending",
            "Warns waiting for the session's next request" + PER_WORKER,
            value=len(self.metrics.recovery),
        )

    def _guard(self) -> Iterator[Metric]:
        # This app's: detector failures inside the engine plus guard failures in the pipeline
        # (gateway.pipeline.verdict.fail_open); each one forwarded a request untouched.
        stats = self.metrics.engine
        yield CounterMetricFamily(
            "loopguard_fail_open_errors",
            "Guard errors that forwarded traffic untouched (fail-open)" + PER_WORKER,
            value=stats.fail_open_errors,
        )
        by_detector = CounterMetricFamily(
            "loopguard_detector_errors", "Detector exceptions, by detector" + PER_WORKER, labels=["detector"]
        )
        for name in sorted(set(DETECTORS) | set(stats.errors_by_detector)):  # every detector from startup, at 0
            by_detector.add_metric([name], stats.errors_by_detector.get(name, 0))
        yield by_detector

    def _state(self) -> Iterator[Metric]:
        store = self.gateway.store
        yield CounterMetricFamily(
            "loopguard_state_degradations",
            "State-store operations the backend could not serve (requests went on without)" + PER_WORKER,
            value=getattr(store, "degradations", 0),
        )
        yield CounterMetricFamily(
            "loopguard_state_evictions",
            "Sessions dropped to stay within bounds" + PER_WORKER,
            value=getattr(store, "evictions", 0),
        )
        if (veto_bytes := getattr(store, "veto_bytes", None)) is not None:  # memory: its byte budget
            yield GaugeMetricFamily(
                "loopguard_state_veto_bytes",
                "Vetoed exchanges kept, serialized (state.max_veto_bytes)",
                value=veto_bytes,
            )
            yield GaugeMetricFamily("loopguard_state_sessions", "Sessions kept", value=len(store))
        yield from self._budgets(store)

    def _budgets(self, store: Any) -> Iterator[Metric]:
        """Per-tenant budgets (``gateway.state.shares``), never labelled by tenant: by kind and rule."""
        evicted = CounterMetricFamily(
            "loopguard_state_budget_evictions",
            "State evicted to keep within the budgets, by kind (sessions, vetoes, records) and rule "
            "(tenant_cap: the tenant's own cap; fair_share: the global bound, from the tenant holding the most)"
            + PER_WORKER,
            labels=["kind", "rule"],
        )
        counts = getattr(store, "budget_evictions", {})
        for kind in ("sessions", "vetoes", "records"):
            for rule in ("tenant_cap", "fair_share"):
                evicted.add_metric([kind, rule], counts.get((kind, rule), 0))
        yield evicted
        if (budgets := getattr(store, "budgets", None)) is not None:  # memory: tenants and their shares
            held = GaugeMetricFamily("loopguard_state_tenants", "Tenants holding state, by kind", labels=["kind"])
            at_cap = GaugeMetricFamily(
                "loopguard_state_tenants_at_cap",
                "Tenants holding 90% or more of their own cap (state.tenant_max_*), by kind",
                labels=["kind"],
            )
            for kind, (tenants, full) in budgets().items():
                held.add_metric([kind], tenants)
                at_cap.add_metric([kind], full)
            yield held
            yield at_cap
        if (chain_bytes := getattr(store, "chain_bytes", None)) is not None:
            yield GaugeMetricFamily(
                "loopguard_state_chain_bytes",
                "Chain records and ownership claims kept, serialized (state.max_chain_bytes)",
                value=chain_bytes,
            )
        if (ledger := getattr(store, "ledger", None)) is not None:  # redis: claims kept through an outage
            yield CounterMetricFamily(
                "loopguard_state_claims_unverified",
                "Ownership checks let through because the store could not tell (state_unavailable)" + PER_WORKER,
                value=getattr(store, "claims_unverified", 0),
            )
            yield GaugeMetricFamily(
                "loopguard_state_claims_unwritten",
                "Ownership claims made while the store was unavailable, waiting to be written" + PER_WORKER,
                value=ledger.pending,
            )

    def _policy(self) -> Iterator[Metric]:
        holder = self.gateway.policies
        yield CounterMetricFamily(
            "loopguard_policy_reloads",
            "Policy files reloaded after an edit" + PER_WORKER,
            value=getattr(holder, "reloads", 0),
        )
        yield CounterMetricFamily(
            "loopguard_policy_reload_errors",
            "Policy edits rejected (the previous policy kept running)" + PER_WORKER,
            value=getattr(holder, "reload_errors", 0),
        )
        info = GaugeMetricFamily("loopguard_policy_info", "The running policy", labels=["policy"])
        info.add_metric([str(getattr(holder.current, "name", ""))], 1)
        yield info

    def _fleet(self) -> Iterator[Metric]:
        """The fleet view (gateway/fleet): tools down, failing calls by tool. Bounded labels:
        only tools that went down have a series of their own (at most ``fleet.metrics_tools``),
        every other failing tool is ``other``, so a flood of tool names adds no series."""
        fleet = getattr(self.gateway, "fleet", None)
        down = GaugeMetricFamily(
            "loopguard_tools_down",
            "Remote tools (with their MCP server or host) down in every tenant: failing alike in "
            "fleet.sessions sessions, as this replica last learnt" + PER_WORKER,
            value=fleet.down_now() if fleet is not None else 0,
        )
        yield down
        failures = CounterMetricFamily(
            "loopguard_tool_failures",
            "Failing calls of remote tools, by tool: those that went down, the rest as `other`" + PER_WORKER,
            labels=["tool"],
        )
        counted = fleet.failures if fleet is not None else {}
        for tool in sorted({"other", *counted}):
            failures.add_metric([tool], counted.get(tool, 0))
        yield failures

    def _inflight(self) -> Iterator[Metric]:
        inflight = self.metrics.inflight
        if inflight is None:
            return
        yield GaugeMetricFamily(
            "loopguard_inflight_body_bytes",
            "Request body bytes held now (limits.max_inflight_bytes)",
            value=inflight.used,
        )
        yield CounterMetricFamily(
            "loopguard_inflight_refused",
            "Requests answered 503 because their body would exceed limits.max_inflight_bytes",
            value=inflight.refused,
        )

    def _audit(self) -> Iterator[Metric]:
        bus = self.gateway.audit
        errors = CounterMetricFamily(
            "loopguard_audit_sink_errors", "Audit sink failures, by sink" + PER_WORKER, labels=["sink"]
        )
        for name in sorted({sink.name for sink in bus.sinks} | set(bus.errors)):  # every sink, at 0 until it fails
            errors.add_metric([name], bus.errors.get(name, 0))
        yield errors
        webhook = bus.find("webhook")
        if webhook is None:
            return
        yield CounterMetricFamily(
            "loopguard_audit_webhook_sent", "Audit events delivered to the webhook" + PER_WORKER, value=webhook.sent
        )
        yield CounterMetricFamily(
            "loopguard_audit_webhook_retries", "Webhook delivery retries" + PER_WORKER, value=webhook.retries
        )
        dropped = CounterMetricFamily(
            "loopguard_audit_webhook_dropped",
            "Audit events the webhook never got, by reason" + PER_WORKER,
            labels=["reason"],
        )
        for reason in ("queue_full", "undeliverable", "shutdown"):
            dropped.add_metric([reason], webhook.dropped.get(reason, 0))
        yield dropped
        yield GaugeMetricFamily(
            "loopguard_audit_webhook_queued",
            "Audit events waiting for the webhook" + PER_WORKER,
            value=webhook.queue.qsize(),
        )
