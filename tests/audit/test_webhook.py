"""The webhook sink against a real local HTTP server, and with that server down: traffic is
unaffected either way, and what could not be delivered is retried, then dropped and counted."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import orjson
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.agent import Agent
from support.guarded import guarded, sample_event, wait_for
from support.looping import stubborn
from support.ports import refused_port
from support.servers import serve

from gateway.audit.webhook_sink import WebhookSink


class Receiver:
    """An audit webhook receiver: records each POST; answers ``statuses`` in turn, then 200."""

    def __init__(self, *statuses: int) -> None:
        self.statuses = list(statuses)
        self.received: list[tuple[dict, dict]] = []
        self.attempts = 0
        self.app = Starlette(routes=[Route("/hook", self.hook, methods=["POST"])])

    async def hook(self, request: Request) -> Response:
        self.attempts += 1
        status = self.statuses.pop(0) if self.statuses else 200
        if status == 200:
            self.received.append((orjson.loads(await request.body()), dict(request.headers)))
        return Response(status_code=status)


@pytest.fixture
def closed_url() -> Iterator[str]:
    """A hook URL nothing listens on: connection refused (held for the test, so no parallel
    test's server takes the port)."""
    with refused_port() as port:
        yield f"http://127.0.0.1:{port}/hook"


def webhook_config(url: str, **extra) -> dict:
    return {
        "webhook": {
            "url": url,
            "backoff_s": 0.01,
            "max_retries": 2,
            "timeout_s": 2,
            "headers": {"Authorization": "Bearer audit-token"},
            **extra,
        }
    }


def metric(url: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    raise AssertionError(f"no sample {name} {labels}")


def test_events_are_posted_with_the_configured_headers(tmp_path):
    receiver = Receiver()
    with serve(receiver.app) as hook_url, guarded(stubborn(), tmp_path, audit=webhook_config(hook_url + "/hook")) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go")
        # three interventions, and what the reject and the terminate saved
        assert wait_for(lambda: len(receiver.received) == 5)
        assert metric(gw.url, "loopguard_audit_webhook_sent_total") == 5
    bodies = [body for body, _ in receiver.received if body["event"] == "loop_intervention"]
    assert [b["action"] for b in bodies] == ["warn", "reject", "terminate"]  # in order
    assert all(b["detector"] == "no_progress" for b in bodies)
    saved = [body for body, _ in receiver.received if body["event"] == "loop_savings"]
    assert sorted(b["action"] for b in saved) == ["reject", "terminate"]
    assert receiver.received[0][1]["authorization"] == "Bearer audit-token"


def test_server_down_traffic_unaffected_drops_and_retries_counted(tmp_path, closed_url):
    with guarded(stubborn(), tmp_path, audit=webhook_config(closed_url)) as gw:
        agent = Agent(gw.client, tools={"read_file": lambda a: "same"})
        answer = agent.run("go")
        # The same outcome as without a webhook: three executions, then the run is ended.
        assert agent.executions["read_file"] == 3 and "stopped" in answer
        sink = gw.gateway.audit.find("webhook")
        # three interventions and two loop_savings events (the reject's and the terminate's)
        assert wait_for(lambda: sink.dropped["undeliverable"] == 5)
        assert sink.retries == 10 and sink.sent == 0  # 2 retries per event
        assert metric(gw.url, "loopguard_audit_webhook_dropped_total", reason="undeliverable") == 5
        assert metric(gw.url, "loopguard_audit_webhook_retries_total") == 10


async def deliver_one(sink: WebhookSink) -> None:
    """Start the sink, send one event, wait until it is settled (sent or dropped), stop."""
    await sink.start()
    sink.emit(sample_event())
    await asyncio.wait_for(sink.queue.join(), 5)
    await sink.stop()


def test_5xx_is_retried_then_delivered(tmp_path):
    receiver = Receiver(503, 500)
    with serve(receiver.app) as hook_url:
        sink = WebhookSink(hook_url + "/hook", backoff_s=0.01, max_retries=3)
        asyncio.run(deliver_one(sink))
    assert (sink.sent, sink.retries, receiver.attempts) == (1, 2, 3)
    assert not sink.dropped["undeliverable"]


def test_4xx_is_not_retried(tmp_path):
    receiver = Receiver(400)
    with serve(receiver.app) as hook_url:
        sink = WebhookSink(hook_url + "/hook", backoff_s=0.01, max_retries=3)
        asyncio.run(deliver_one(sink))
    assert (sink.sent, sink.retries, receiver.attempts, sink.dropped["undeliverable"]) == (0, 0, 1, 1)


async def test_a_full_queue_drops_instead_of_waiting(closed_url):
    sink = WebhookSink(closed_url, queue_size=2, max_retries=0)
    for _ in range(5):
        sink.emit(sample_event())  # returns at once, never awaits
    assert sink.dropped["queue_full"] == 3 and sink.queue.qsize() == 2
    await sink.stop()  # never started: what is queued is counted as lost at shutdown
    assert sink.dropped["shutdown"] == 2


async def test_shutdown_gives_up_on_a_dead_receiver_quickly(closed_url):
    sink = WebhookSink(closed_url, backoff_s=10, max_retries=5, drain_s=0.2)
    await sink.start()
    sink.emit(sample_event())
    loop = asyncio.get_running_loop()
    started = loop.time()
    await sink.stop()
    assert loop.time() - started < 2
    assert sink.dropped["shutdown"] == 1
