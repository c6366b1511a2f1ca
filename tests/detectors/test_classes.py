"""The classes of loops real agents' recorded sessions showed, and the healthy runs shaped like
them (tests/support/classes.py), judged through the server's own request and response paths
under the shipped default policy: each loop is warned, then stopped (refused or ended) by the
call its case names; no healthy run is ever stopped."""

from __future__ import annotations

import pytest
from runs import replayed, stopped_at
from support.classes import HEALTHY, LOOPS


@pytest.mark.parametrize("name", LOOPS)
def test_a_loop_is_warned_then_stopped(name):
    case = LOOPS[name]
    script = case.script()
    first = replayed(script, **case.speaker.kwargs())
    assert "warn" in first and first["warn"][0] <= case.warn_by, first
    assert (stopped_at(script, **case.speaker.kwargs()) or 10**6) <= case.stop_by, first


@pytest.mark.parametrize("name", HEALTHY)
def test_a_healthy_run_is_never_stopped(name):
    case = HEALTHY[name]
    assert stopped_at(case.script(), **case.speaker.kwargs()) is None


QUIET = [name for name, case in HEALTHY.items() if "warned" not in case.tags]


@pytest.mark.parametrize("name", QUIET)
def test_a_healthy_run_is_not_even_warned(name):
    case = HEALTHY[name]
    assert replayed(case.script(), **case.speaker.kwargs()) == {}
