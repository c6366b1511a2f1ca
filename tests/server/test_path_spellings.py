"""No spelling of a generate route reaches a model unjudged: every generate route of every
protocol and cloud, spelt every way (each of its characters percent-encoded once, twice, three
times, in upper, lower and mixed case; each letter's case flipped; an encoded or raw ``?`` or
``#``, ``;``, dot and empty segments, control characters, inserted at its end, before its last
segment and before its ``:method``), is sent over a bare socket to a real gateway whose every
provider is a scripted cloud that routes as a lenient frontend does (the target decoded once,
case folded, ``;parameters`` and empty segments dropped) and answers any model call it finds
with the 5th identical looping call, and logs each exact request target.

For each spelling the gateway refuses it (4xx), or judges it (the run is ended: the call never
reaches the client), or the cloud finds no model call in what it was sent. Never: the looping
call in what the client got, a 5xx of the gateway's own, or a cloud request the gateway did not
send as the route it judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cloud_routes import HEADERS, ROUTES, Route, cloud_gateway, looping_body
from support.looping_cloud import LoopingCloud, delivered, route_of
from support.rawhttp import send
from support.spellings import spellings

# One test per distinct target: the routes whose body says whether they stream share their path.
TARGETS = {route.target: route for route in ROUTES}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    cloud = LoopingCloud()
    with cloud_gateway(Path(tmp_path_factory.mktemp("spellings")), cloud) as url:
        yield cloud, url


@pytest.mark.parametrize("route", TARGETS.values(), ids=[r.name for r in TARGETS.values()])
def test_no_spelling_of_a_generate_route_reaches_the_model_unjudged(gateway, route: Route):
    cloud, url = gateway
    body = json.dumps(looping_body(route)).encode()
    outcomes: dict[str, int] = {"refused": 0, "judged": 0, "no model call": 0}
    for what, path in spellings(route.path):
        target = path + ("?" + route.query if route.query else "")
        before = len(cloud.seen)
        answer = send(url, "POST", target, HEADERS, body, timeout=30)
        calls = [s for s in cloud.seen[before:] if s.family is not None]
        assert not delivered(answer.body), (what, target, answer.status, answer.body[:300])
        assert answer.status < 500, (what, target, answer.status, answer.body[:300])
        if what == "as-is":  # the route itself: judged, the run ended at the 5th call
            assert answer.status == 200 and calls, (target, answer.status)
        if calls:
            # The gateway sent a model call: it judged it, as the route the cloud routed.
            assert answer.headers.get("x-loopguard-action") in ("reject", "terminate"), (what, target)
            sent = {route_of(s.target)[1] for s in calls}
            assert sent == {route.answered_as}, (what, target, sent)
            outcomes["judged"] += 1
        elif 400 <= answer.status < 500 and answer.headers.get("x-loopguard-action") is None:
            outcomes["refused"] += 1
        else:
            outcomes["no model call"] += 1
    assert outcomes["judged"] >= 1 and outcomes["refused"] >= 20, outcomes
