"""Live savings: each reject / terminate priced off the request path.

``emit`` (on the request path) only puts the stopped work on a bounded queue. A worker thread
prices it with the replay's pricer (``gateway.savings``: litellm's price table read as data, the
config's ``pricing:`` first, tiktoken or characters / 4), adds it to
``loopguard_tokens_saved_total`` / ``loopguard_cost_saved_usd_total`` by detector and model,
notes how each model is counted in ``loopguard_savings_model_info``, and sends one
``loop_savings`` audit event to the record sinks (log, JSONL, webhook) on the event loop. The
price table and the tokenizers load in that thread when the first run is stopped.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Mapping
from typing import Any

import structlog

from gateway.audit.bus import AuditBus, Sink
from gateway.audit.events import AuditEvent, InterventionEvent, SavingsEvent, StoppedWork, now_iso
from gateway.metrics.registry import GatewayMetrics
from gateway.pricing.table import Price
from gateway.protocols.registry import BY_NAME
from gateway.savings import DEFAULT, Pricer, Savings, one_round
from gateway.untrusted import OTHER

_STOP = object()
_Item = tuple[InterventionEvent, StoppedWork]


class SavingsSink:
    name = "savings"

    def __init__(
        self,
        metrics: GatewayMetrics,
        bus: AuditBus,
        forward: list[Sink],
        *,
        pricer: Pricer | None = None,
        queue_size: int = 10_000,
    ) -> None:
        self.metrics = metrics
        self.bus = bus
        self.forward = forward  # the record sinks that get the loop_savings events
        self.pricer = pricer or Pricer()
        self.queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self.dropped = 0
        self._models: set[str] = set()  # model label values whose pricing method is exposed
        self._loop: asyncio.AbstractEventLoop | None = None
        self._worker: threading.Thread | None = None

    # --- request path: never blocks, never raises ----------------------------------------------

    def emit(self, event: AuditEvent) -> None:
        if not isinstance(event, InterventionEvent):  # only an intervention carries stopped work
            return
        work = event.work
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
        """Price what is queued and hand the last events to the record sinks before they close."""
        if self._worker is None:
            return
        self.queue.put(_STOP)
        await asyncio.to_thread(self._worker.join, 10.0)
        await asyncio.sleep(0)  # run the forwards the worker scheduled

    # --- the worker thread -------------------------------------------------------------------------

    def _work(self) -> None:
        while (item := self.queue.get()) is not _STOP:
            try:
                self._one(item)
            except Exception as exc:
                structlog.get_logger("loopguard").warning("savings.estimate_failed", error=type(exc).__name__)

    def _one(self, item: _Item) -> None:
        event, work = item
        adapter = BY_NAME.get(work.protocol or "", DEFAULT)
        savings = self.pricer.savings(one_round(work.messages, adapter), work.model, adapter)
        self._count(event, work, savings)
        self._send(event, work, savings)

    def _model(self, work: StoppedWork) -> str:
        model = self.metrics.models(work.model)  # the client's name: bounded, "other" beyond
        if model not in self._models and model != OTHER:
            self._models.add(model)
            how = self.pricer.methods.get(work.model or "(no model)")
            if how is not None:
                self.metrics.savings_method(model, how.tokens, how.price)
        return model

    def _count(self, event: InterventionEvent, work: StoppedWork, savings: Savings) -> None:
        model = self._model(work)
        self.metrics.tokens_saved.labels(event.detector, model).inc(savings.tokens)
        if savings.cost:
            self.metrics.cost_saved.labels(event.detector, model).inc(savings.cost)

    def _send(self, event: InterventionEvent, work: StoppedWork, savings: Savings) -> None:
        out = SavingsEvent(
            time=now_iso(),
            session=event.session,
            request_id=event.request_id,
            detector=event.detector,
            action=event.action,
            phase=event.phase,
            model=work.model,
            tokens=savings.tokens,
            cost_usd=savings.cost,
            estimated=savings.estimated,
        )
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._deliver, out)
                return
            except RuntimeError:  # the loop closed between the check and the call
                pass
        self._deliver(out)

    def _deliver(self, event: SavingsEvent) -> None:
        self.bus.emit(event, self.forward)


def add_savings(bus: AuditBus, metrics: GatewayMetrics, prices: Mapping[str, Price] | None = None) -> SavingsSink:
    """Put the savings sink first on ``bus``: it then stops (and drains) before the record sinks
    it forwards to, which are the ones on the bus now. ``prices``: the config's, before the table's."""
    sink = SavingsSink(metrics, bus, forward=list(bus.sinks), pricer=Pricer(configured=prices))
    bus.sinks.insert(0, sink)
    return sink
