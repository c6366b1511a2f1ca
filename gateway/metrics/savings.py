"""Live savings: each reject / terminate priced off the request path.

``emit`` (on the request path) only puts the stopped work on a bounded queue. A worker thread
estimates it with the replay's estimator (``gateway.savings``), adds it to
``loopguard_tokens_saved_total`` / ``loopguard_cost_saved_usd_total`` by detector and model, and
sends one ``loop_savings`` audit event to the record sinks (log, JSONL, webhook) on the event
loop. litellm's price table loads in a second thread when the first stopped run arrives (not at
startup: importing litellm costs seconds of CPU and ~190 MB, which a process that never stops a
loop should not pay); until it is there, tokens are counted as characters / 4 and the cost is
added once the table is loaded.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from typing import Any

import structlog

from gateway.audit.bus import AuditBus, Sink
from gateway.audit.events import InterventionEvent, SavingsEvent, StoppedWork, now_iso
from gateway.metrics.registry import GatewayMetrics
from gateway.savings import Pricer, Savings, estimate, one_round

_READY = object()  # the price table finished loading (or litellm is not installed)
_STOP = object()
_Item = tuple[InterventionEvent, StoppedWork]


class SavingsSink:
    name = "savings"

    def __init__(self, metrics: GatewayMetrics, bus: AuditBus, forward: list[Sink], *,
                 pricer: Pricer | None = None, queue_size: int = 10_000) -> None:
        self.metrics = metrics
        self.bus = bus
        self.forward = forward  # the record sinks that get the loop_savings events
        self.pricer = pricer or Pricer(lazy=False)
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self.dropped = 0
        self.estimated = 0  # events counted before the price table was there
        self._pending: list[tuple[_Item, Savings]] = []  # counted by estimate, cost still to add
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: threading.Thread | None = None
        self._loading = False  # the price-table thread was started

    # --- request path: never blocks, never raises ----------------------------------------------

    def emit(self, event: InterventionEvent) -> None:
        work = getattr(event, "work", None)
        if work is None or event.action not in ("reject", "terminate"):
            return
        try:
            self.queue.put_nowait((event, work))
        except queue.Full:
            self.dropped += 1

    # --- lifecycle ---------------------------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._worker = threading.Thread(target=self._work, name="loopguard-savings", daemon=True)
        self._worker.start()

    async def stop(self) -> None:
        """Estimate what is queued (the table may still be loading: then by estimate) and hand the
        last events to the record sinks before they close."""
        if self._worker is None:
            return
        self.queue.put(_STOP)
        await asyncio.to_thread(self._worker.join, 10.0)
        await asyncio.sleep(0)  # run the forwards the worker scheduled

    # --- worker threads ----------------------------------------------------------------------------

    def _load(self) -> None:
        try:
            self.pricer.load()
        except Exception as exc:  # noqa: BLE001 - a broken litellm leaves savings unpriced, never the gateway down
            structlog.get_logger("loopguard").warning("savings.price_table_failed", error=type(exc).__name__)
        self.queue.put(_READY)

    def _work(self) -> None:
        while True:
            item = self.queue.get()
            if item is _STOP:
                self._settle(priced=self.pricer.loaded)
                return
            try:
                if item is _READY:
                    self._settle(priced=True)
                else:
                    self._one(item)
            except Exception as exc:  # noqa: BLE001 - one odd history must not stop the worker
                structlog.get_logger("loopguard").warning("savings.estimate_failed", error=type(exc).__name__)

    def _one(self, item: _Item) -> None:
        event, work = item
        if not self._loading and not self.pricer.loaded:
            self._loading = True
            threading.Thread(target=self._load, name="loopguard-price-table", daemon=True).start()
        if not self.pricer.loaded:
            savings = estimate(one_round(work.messages))
            self._count(event, work, savings)
            self._pending.append((item, savings))
            self.estimated += 1
            return
        savings = self.pricer.savings(one_round(work.messages), work.model)
        self._count(event, work, savings)
        self._send(event, work, savings)

    def _settle(self, priced: bool) -> None:
        """Events counted by estimate: their cost is added now, and their audit events go out."""
        pending, self._pending = self._pending, []
        for (event, work), counted in pending:
            cost = self.pricer.savings(one_round(work.messages), work.model).cost if priced else None
            if cost:
                self.metrics.cost_saved.labels(event.detector, self._model(work)).inc(cost)
            self._send(event, work, Savings(counted.tokens, cost, True))

    def _model(self, work: StoppedWork) -> str:
        return self.metrics.models(work.model)  # the client's name: bounded, "other" beyond

    def _count(self, event: InterventionEvent, work: StoppedWork, savings: Savings) -> None:
        model = self._model(work)
        self.metrics.tokens_saved.labels(event.detector, model).inc(savings.tokens)
        if savings.cost:
            self.metrics.cost_saved.labels(event.detector, model).inc(savings.cost)

    def _send(self, event: InterventionEvent, work: StoppedWork, savings: Savings) -> None:
        out = SavingsEvent(time=now_iso(), session=event.session, request_id=event.request_id,
                           detector=event.detector, action=event.action, phase=event.phase,
                           model=work.model, tokens=savings.tokens, cost_usd=savings.cost,
                           estimated=savings.estimated)
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._deliver, out)
                return
            except RuntimeError:  # the loop closed between the check and the call
                pass
        self._deliver(out)

    def _deliver(self, event: SavingsEvent) -> None:
        self.bus.emit(event, self.forward)


def add_savings(bus: AuditBus, metrics: GatewayMetrics) -> SavingsSink:
    """Put the savings sink first on ``bus``: it then stops (and drains) before the record sinks
    it forwards to, which are the ones on the bus now."""
    sink = SavingsSink(metrics, bus, forward=list(bus.sinks))
    bus.sinks.insert(0, sink)
    return sink
