"""When the guard fails open, nothing says an action was applied that was not."""

import httpx
import orjson
from prometheus_client.parser import text_string_to_metric_families
from support.upstream import Reply

from gateway.pipeline.exchange import Exchange

from .bodies import looping_history, post


def test_a_failed_edit_forwards_the_request_untouched_and_says_pass(start_guarded, monkeypatch):
    upstream, client, _ = start_guarded(lambda r: Reply(content="fine"))

    def broken(self):
        raise RuntimeError("cannot write the body")

    monkeypatch.setattr(Exchange, "sent_body", broken)
    body = orjson.dumps({"model": "m", "messages": looping_history()})  # would be warned
    response = post(client, body)
    assert response.status_code == 200
    assert upstream.last["raw"] == body
    assert response.headers["x-loopguard-action"] == "pass"
    assert "x-loopguard-detector" not in response.headers
    metrics = httpx.get(client.gateway_url + "/metrics").text
    assert "loopguard_fail_open_errors_total 1.0" in metrics
    applied = [
        s
        for f in text_string_to_metric_families(metrics)
        for s in f.samples
        if s.name == "loopguard_interventions_total" and s.value
    ]
    assert not applied  # no warn was applied (every series is there from startup, at 0)
