"""A small, seeded run of the cloud fuzzer (``benchmarks/fuzz_clouds.py`` runs it at scale): random
spellings, malformed bodies, odd queries and broken cloud answers on every cloud route, each an
agent's 5th identical call, through a real gateway. None may end in a 5xx of the gateway's own,
a delivered looping call, a fail-open, a stream that ends malformed, or a hang."""

from __future__ import annotations

from support.client_reads import looping_calls
from support.cloud_faults import FAULTS
from support.cloud_routes import ROUTES
from support.fuzz_clouds import fuzz
from support.looping_cloud import answer_for


def test_the_checks_see_a_delivered_looping_call():
    """Controls: the cloud's own answer, as it comes, holds the looping call for every route's
    client (so a relayed one is counted), and every fault has a name the run reports."""
    for route in ROUTES:
        answer = answer_for(route.answered_as, route.stream)
        assert looping_calls(route.answered_as, b"".join(answer.pieces), answer.content_type), route.name
    assert len(FAULTS) >= 40


def test_a_seeded_fuzz_of_every_cloud_route_finds_nothing(tmp_path):
    tally = fuzz(400, seed=7, tmp=tmp_path)
    summary = tally.summary()
    assert tally.requests == 400 and len(tally.by_kind) == 4
    assert summary["broken_upstream_cases"] > 50 and summary["path_spellings"] > 50
    assert tally.violations == 0, summary
