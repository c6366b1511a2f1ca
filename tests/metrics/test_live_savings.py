"""Live savings on the standalone gateway: a terminated loop shows up in /metrics as tokens and
dollars, estimated by the savings sink's worker thread after the response, never by the request."""

from __future__ import annotations

import threading

import httpx
from prometheus_client.parser import text_string_to_metric_families
from support.guarded import guarded, wait_for
from support.looping import stubborn

from gateway.savings import Pricer, Savings

MODEL = "gpt-4o-mini"  # in litellm's bundled price table
TOOLS = [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}]


def metric(url: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def run_loop(client, prompt: str, model: str = MODEL) -> tuple[str, int]:
    """An agent on the openai SDK: executes every call until the model answers in text."""
    messages = [{"role": "user", "content": prompt}]
    executed = 0
    for _ in range(12):
        message = client.chat.completions.create(model=model, messages=messages, tools=TOOLS).choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content, executed
        for call in message.tool_calls:
            executed += 1
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "the same text"})
    raise AssertionError("the loop was not stopped")


def test_metrics_show_tokens_and_dollars_saved_after_a_terminate(tmp_path):
    with guarded(stubborn(), tmp_path) as gw:
        answer, executed = run_loop(gw.client, "summarise a.txt")
        assert executed == 3 and answer.startswith("[LoopGuard] This run was stopped")
        labels = {"detector": "no_progress", "model": MODEL}
        # the reject and the terminate each saved a round, priced from litellm's table
        assert wait_for(lambda: metric(gw.url, "loopguard_cost_saved_usd_total", **labels) > 0, timeout=120)
        assert metric(gw.url, "loopguard_tokens_saved_total", **labels) > 0


class GatedPricer(Pricer):
    """Prices only when the test opens the gate, and notes which thread asked."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.threads: list[str] = []

    def savings(self, messages, model, adapter=None) -> Savings:
        self.threads.append(threading.current_thread().name)
        self.gate.wait(60)
        return Savings(1000, 0.25, False)


def test_the_request_that_stops_a_loop_does_not_wait_for_its_estimate(tmp_path):
    with guarded(stubborn(), tmp_path) as gw:
        pricer = GatedPricer()
        gw.gateway.audit.find("savings").pricer = pricer
        # The whole run, terminate included, completes while every estimate is still blocked.
        answer, _ = run_loop(gw.client, "summarise b.txt")
        assert answer.startswith("[LoopGuard] This run was stopped")
        labels = {"detector": "no_progress", "model": MODEL}
        assert metric(gw.url, "loopguard_tokens_saved_total", **labels) == 0
        pricer.gate.set()
        assert wait_for(lambda: metric(gw.url, "loopguard_cost_saved_usd_total", **labels) == 0.5)
        assert metric(gw.url, "loopguard_tokens_saved_total", **labels) == 2000
        assert set(pricer.threads) == {"loopguard-savings"}  # never the request's thread
