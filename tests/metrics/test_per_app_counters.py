"""Two gateway apps in one process count their own fail-opens: a broken detector in one never
shows up in the other's /metrics (each app has its own registry, and its own counters)."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families
from support.agent import Agent
from support.guarded import guarded
from support.looping import stubborn

from gateway.detectors import REGISTRY
from gateway.detectors.base import Detector
from gateway.policy.engine import UNATTRIBUTED


def _raising(trace, settings):
    raise RuntimeError("detector bug")


def fail_opens(url: str) -> tuple[float, dict[str, float]]:
    total, by_detector = 0.0, {}
    for family in text_string_to_metric_families(httpx.get(url + "/metrics").text):
        for sample in family.samples:
            if sample.name == "loopguard_fail_open_errors_total":
                total = sample.value
            elif sample.name == "loopguard_detector_errors_total" and sample.value:
                # every detector has a series from startup, at 0
                by_detector[sample.labels["detector"]] = sample.value
    return total, by_detector


def test_two_apps_in_one_process_do_not_share_fail_open_counts(tmp_path):
    broken = {**REGISTRY, "no_progress": Detector("no_progress", _raising, REGISTRY["no_progress"].settings)}
    unattributed = UNATTRIBUTED.fail_open_errors
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with guarded(stubborn(), tmp_path / "a", registry=broken) as bad, guarded(stubborn(), tmp_path / "b") as good:
        for gw in (bad, good):
            Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=3)
        bad_total, bad_detectors = fail_opens(bad.url)
        good_total, good_detectors = fail_opens(good.url)
    assert bad_total >= 3 and bad_detectors.get("no_progress", 0) >= 3
    assert good_total == 0 and good_detectors == {}
    assert UNATTRIBUTED.fail_open_errors == unattributed  # nothing in an app escaped its counters
