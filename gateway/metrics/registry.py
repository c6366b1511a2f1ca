"""The gateway's own metrics, in a registry of its own."""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from gateway.audit.events import AuditEvent, InterventionEvent
from gateway.metrics.recovery import RecoveryMonitor
from gateway.policy.engine import EngineStats, Judgement
from gateway.protocols.registry import EXACT, KINDS, PATTERNS, guarded_route, protocol_of
from gateway.untrusted import BoundedLabel

# The gateway's own work per request is sub-millisecond to a few ms; the upstream is seconds to
# minutes. Separate bucket ladders keep both readable.
OVERHEAD_BUCKETS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)
UPSTREAM_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)


# Set (by `gateway.serving` for server.workers > 1, or by the operator) before any metric exists,
# it puts every counter and histogram in files shared by all worker processes (prometheus_client's
# multiprocess mode), and a scrape, answered by whichever worker, reads all of them.
SHARED_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


# Route families worth a label of their own (agent protocols first); any other is "other", so a
# client cannot grow the label set.
FAMILIES = frozenset(
    {
        "responses",
        "messages",
        "completions",
        "chat",
        "assistants",
        "threads",
        "realtime",
        "embeddings",
        "models",
        "files",
        "batches",
        "images",
        "audio",
        "moderations",
        "fine_tuning",
        "uploads",
        "vector_stores",
    }
)


# Routes with a label value of their own: the guarded protocols' (each spelling a client may use;
# a declared pattern such as ``/v1beta/models/{model}:generateContent`` is one value), health
# and metrics. Every other /v1/* path is one value, anything else another, so a client cannot
# grow the label set of the request counter or the latency histograms.
_EXACT = frozenset({*EXACT, "/healthz", "/readyz", "/metrics"})


def route_of(path: str) -> str:
    """A bounded label: the known routes, every other /v1/* path as one, the rest as "other"."""
    if path in _EXACT:
        return path
    found = guarded_route(path) if PATTERNS else None
    if found is not None:
        return found[0]
    return "/v1/*" if path.startswith("/v1/") else "other"


# The label values known before any traffic: every series of them exists from startup, at 0.
ACTIONS = ("warn", "reject", "terminate")
SHADOW = ("false", "true")
OUTCOMES = ("recovered", "persisted")
TERMINATE_MODES = ("answer", "reply", "error")
JUDGE_OUTCOMES = ("looping", "clear", "failed")
NO_MODEL = ""  # the savings series of a detector before its first stopped run names a model


def family_of(path: str) -> str:
    """``/v1/responses/abc`` -> ``responses``; ``/v1/chat/...`` (a spelling the guarded
    route does not match) -> ``chat``."""
    parts = path.strip("/").split("/")
    first = parts[1] if parts[0] == "v1" and len(parts) > 1 else parts[0]
    if first in FAMILIES:
        return first
    protocol = protocol_of(path)  # a guarded protocol's other paths: its name
    return protocol.name if protocol is not None else "other"


class GatewayMetrics:
    def __init__(self, registry: CollectorRegistry | None = None, *, settle_s: float = 600.0) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        self.exposed = self.registry
        r = self.registry
        self.requests = Counter(
            "loopguard_requests", "HTTP requests answered, by route and status", ["route", "status"], registry=r
        )
        self.interventions = Counter(
            "loopguard_interventions",
            "Findings acted on: shadow=false is what was applied to traffic; shadow=true is a "
            "stronger action the policy held back (shadow mode or max_action)",
            ["detector", "action", "shadow"],
            registry=r,
        )
        self.overhead = Histogram(
            "loopguard_gateway_overhead_seconds",
            "Time a guarded request spent in the gateway's own code (upstream wait "
            "excluded), by route (the protocol: chat, responses, anthropic, ...)",
            ["route"],
            buckets=OVERHEAD_BUCKETS,
            registry=r,
        )
        self.upstream = Histogram(
            "loopguard_upstream_seconds",
            "Time a guarded request spent waiting for the upstream, re-asks included, by route (the protocol)",
            ["route"],
            buckets=UPSTREAM_BUCKETS,
            registry=r,
        )
        self.unguarded_requests = Counter(
            "loopguard_unguarded_requests",
            "Requests relayed without judging, by route family (responses, messages, models, ...)",
            ["family"],
            registry=r,
        )
        self.warn_outcomes = Counter(
            "loopguard_warn_outcomes",
            "After a warn, did the run break the pattern (recovered) or persist",
            ["detector", "outcome"],
            registry=r,
        )
        self.tokens_saved = Counter(
            "loopguard_tokens_saved",
            "Tokens one more round of each stopped loop would have cost (reject, terminate)",
            ["detector", "model"],
            registry=r,
        )
        self.cost_saved = Counter(
            "loopguard_cost_saved_usd",
            "USD one more round of each stopped loop would have cost, at the config's "
            "`pricing:` or litellm's list prices (models with neither add tokens only)",
            ["detector", "model"],
            registry=r,
        )
        self.savings_methods = Gauge(
            "loopguard_savings_model_info",
            "How each model's savings are counted (1 per model): tokens by a tiktoken "
            "encoding or `estimated` (characters / 4); price from `table` (litellm's), "
            "`config` (`pricing:`) or `none`",
            ["model", "tokens", "price"],
            registry=r,
            multiprocess_mode="max",
        )
        self.terminations = Counter(
            "loopguard_terminations",
            "Runs ended, by how the final reply was written: answer (the model, "
            "tools closed), reply (the template), error",
            ["mode"],
            registry=r,
        )
        self.answer_tokens = Counter(
            "loopguard_terminate_answer_tokens",
            "Output tokens of final answers the model wrote with tools closed "
            "(terminate mode answer), by model; estimated at 4 characters a token "
            "when the upstream reported none",
            ["model"],
            registry=r,
        )
        self.judge_checks = Counter(
            "loopguard_judge_checks",
            "Checks by the optional model judge (detectors.llm_judge), by outcome: looping, clear, failed",
            ["outcome"],
            registry=r,
        )
        self.judge_tokens = Counter(
            "loopguard_judge_tokens",
            "Tokens the model judge's checks used, as its upstream reported them, by kind: prompt, completion",
            ["kind"],
            registry=r,
        )
        self.recovery = RecoveryMonitor(self._outcome, settle_s=settle_s)
        self.inflight: Any = None  # the front's body-bytes budget (gateway.server.inflight), when serving
        self.models = BoundedLabel()  # model names are the client's: a bounded set, then "other"
        self._children: dict[tuple[Any, ...], Any] = {}  # label values -> child, built once each
        self.engine = EngineStats()  # this app's fail-opens (see policy.engine.counting_into)

    # --- hot path: a dict lookup and an inc() --------------------------------------------------

    def request(self, route: str, status: int) -> None:
        key = ("req", route, status)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.requests.labels(route, str(status))
        child.inc()

    def unguarded(self, path: str) -> None:
        key = ("ung", family_of(path))
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.unguarded_requests.labels(key[1])
        child.inc()

    def exchange_done(self, route: str, overhead_s: float, upstream_s: float) -> None:
        """A guarded exchange is over: its time in the gateway and at the upstream, by route
        (the protocol: a handful of values, whatever path spelling the client used)."""
        key = ("lat", route)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.overhead.labels(key[1]), self.upstream.labels(key[1]))
        children[0].observe(overhead_s)
        children[1].observe(upstream_s)

    def start_at_zero(self, detectors: Iterable[str], routes: Iterable[str] = (), requests: Iterable[str] = ()) -> None:
        """Create every series whose label values are known before traffic, at 0: a dashboard
        panel then shows 0 rather than "No data", and ``rate()`` / ``increase()`` count a
        series' first event (a series born at its first event has no sample to increase from).
        Savings are per model, which only traffic names: each detector's series starts with an
        empty ``model`` (the same series as no ``model`` label at all in PromQL)."""
        for detector in detectors:
            for action in ACTIONS:
                for shadow in SHADOW:
                    self.interventions.labels(detector, action, shadow)
            for outcome in OUTCOMES:
                self.warn_outcomes.labels(detector, outcome)
            self.tokens_saved.labels(detector, NO_MODEL)
            self.cost_saved.labels(detector, NO_MODEL)
        for mode in TERMINATE_MODES:
            self.terminations.labels(mode)
        for outcome in JUDGE_OUTCOMES:
            self.judge_checks.labels(outcome)
        for kind in ("prompt", "completion"):
            self.judge_tokens.labels(kind)
        for family in FAMILIES | {a.name for a in KINDS if a.declared.relays}:
            self.unguarded_requests.labels(family)
        for route in routes:
            self.overhead.labels(route)
            self.upstream.labels(route)
        for path in requests:
            self.requests.labels(route_of(path), "200")

    def judged(self, session: str, judgement: Judgement) -> None:
        self.recovery.judged(session, judgement)

    # --- audit events ----------------------------------------------------------------------------

    def intervention(self, event: InterventionEvent) -> None:
        if event.action != "pass":
            self._count(event.detector, event.action, "false")
        if event.shadow:
            self._count(event.detector, event.would, "true")
        if event.phase == "response" and event.action in ("reject", "terminate"):
            self.recovery.refused(event.session, event.detector, event.tool, event.count)
        if event.action == "terminate" and event.terminate:
            self.terminations.labels(event.terminate).inc()

    def answered(self, model: str, tokens: int) -> None:
        """A terminated run's final answer, written by the model: its tokens."""
        self.answer_tokens.labels(self.models(model)).inc(tokens)

    def judge_checked(self, outcome: str, prompt_tokens: int, completion_tokens: int) -> None:
        """One check by the model judge: its outcome and the tokens it cost."""
        self.judge_checks.labels(outcome).inc()
        self.judge_tokens.labels("prompt").inc(prompt_tokens)
        self.judge_tokens.labels("completion").inc(completion_tokens)

    def savings_method(self, model: str, tokens: str, price: str) -> None:
        self.savings_methods.labels(model, tokens, price).set(1)

    def _count(self, detector: str, action: str, shadow: str) -> None:
        key = ("int", detector, action, shadow)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self.interventions.labels(detector, action, shadow)
        child.inc()

    def _outcome(self, detector: str, outcome: str) -> None:
        self.warn_outcomes.labels(detector, outcome).inc()

    def watch(self, gateway: Any) -> None:
        """Expose the gateway's slower-moving state, read on each scrape; with workers, next to
        the counters of all of them (``exposed``: what /metrics answers)."""
        from gateway.metrics.collectors import GatewayCollector

        collector = GatewayCollector(gateway, self)
        self.registry.register(collector)
        self.exposed = self.registry
        if shared := os.environ.get(SHARED_DIR_ENV):
            from prometheus_client.multiprocess import MultiProcessCollector

            self.exposed = CollectorRegistry()
            MultiProcessCollector(self.exposed, path=shared)  # type: ignore[no-untyped-call]  # prometheus_client leaves its __init__ unannotated
            self.exposed.register(collector)  # this worker's own: read where it is kept


class MetricsSink:
    """The audit bus's view for metrics: interventions counted from the same events operators
    read in the log, so the two can never disagree."""

    name = "metrics"

    def __init__(self, metrics: GatewayMetrics) -> None:
        self.metrics = metrics

    def emit(self, event: AuditEvent) -> None:
        if isinstance(event, InterventionEvent):  # savings events are counted by their own sink
            self.metrics.intervention(event)
