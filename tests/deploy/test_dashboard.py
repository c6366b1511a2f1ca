"""deploy/grafana/loopguard.json queries only metrics a real gateway serves on /metrics.

A renamed or removed metric would leave a dashboard panel silently empty; this test names every
metric the dashboard queries that the gateway does not serve.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families
from support.protocols import all_protocols, one_of_each

from gateway.protocols.registry import KINDS

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "loopguard.json"
_METRIC = re.compile(r"\bloopguard_[a-z0-9_]+")
_GROUPED = re.compile(r"\bby \(([^)]*)\)")  # sum by (le, route) (...)
_MATCHED = re.compile(r"([a-z_]+)=~?\"")  # {shadow="false"}
# The series names each metric type exposes besides its family name.
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
    "summary": ("_sum", "_count", "_created"),
    "gauge": (),
    "info": ("_info",),
}


def queried() -> dict[str, list[str]]:
    """metric name -> titles of the panels that query it."""
    found: dict[str, list[str]] = {}
    for panel in json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]:
        for target in panel.get("targets", []):
            for name in _METRIC.findall(target["expr"]):
                found.setdefault(name, []).append(panel["title"])
    return found


def labels_queried() -> dict[str, set[str]]:
    """metric name -> the labels the dashboard groups it by or matches on."""
    found: dict[str, set[str]] = {}
    for panel in json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]:
        for target in panel.get("targets", []):
            expr = target["expr"]
            labels = {name.strip() for group in _GROUPED.findall(expr) for name in group.split(",")}
            labels |= set(_MATCHED.findall(expr))
            for name in _METRIC.findall(expr):
                found.setdefault(name, set()).update(labels - {""})
    return found


def served(text: str) -> set[str]:
    names = set()
    for family in text_string_to_metric_families(text):
        names.add(family.name)
        names.update(family.name + suffix for suffix in _SUFFIXES.get(family.type, ()))
        names.update(sample.name for sample in family.samples)
    return names


def test_the_dashboard_covers_what_operators_watch():
    names = set(queried())
    for needed in (
        "loopguard_requests_total",
        "loopguard_gateway_overhead_seconds_bucket",
        "loopguard_interventions_total",
        "loopguard_warn_outcomes_total",
        "loopguard_fail_open_errors_total",
        "loopguard_state_degradations_total",
        "loopguard_tokens_saved_total",
        "loopguard_cost_saved_usd_total",
    ):
        assert needed in names, f"the dashboard has no panel on {needed}"


def test_every_metric_the_dashboard_queries_is_served(gateway):
    response = httpx.get(gateway + "/metrics")
    assert response.status_code == 200
    available = served(response.text)
    missing = {name: panels for name, panels in queried().items() if name not in available}
    assert not missing, "metrics the dashboard queries but /metrics does not serve:\n" + "\n".join(
        f"  {name}  (panels: {', '.join(sorted(set(panels)))})" for name, panels in sorted(missing.items())
    )


def test_every_metric_the_dashboard_queries_has_series_right_after_startup(gateway):
    """Before any traffic: a metric with no series leaves its panel on "No data", and its first
    event is lost to rate() / increase() (no earlier sample to increase from)."""
    text = httpx.get(gateway + "/metrics").text
    sampled: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            sampled.setdefault(sample.name, set()).update(sample.labels)
    missing = sorted(name for name in queried() if name not in sampled)
    assert not missing, f"no series at startup for: {missing}"
    unlabelled = {
        name: sorted(labels - sampled[name]) for name, labels in labels_queried().items() if labels - sampled[name]
    }
    assert not unlabelled, f"series at startup without the labels the dashboard reads: {unlabelled}"


def test_each_protocol_has_a_panel_from_startup(gateway):
    """The per-protocol panel repeats over a variable whose values are the latency histograms'
    routes: every guarded protocol has its series from startup, so each gets its panel."""
    dashboard = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    variable = next(v for v in dashboard["templating"]["list"] if v["name"] == "protocol")
    metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)", variable["query"]["query"]).groups()
    repeated = [p for p in dashboard["panels"] if p.get("repeat") == "protocol"]
    assert repeated and all('route="$protocol"' in t["expr"] for p in repeated for t in p["targets"])
    values = {
        sample.labels[label]
        for family in text_string_to_metric_families(httpx.get(gateway + "/metrics").text)
        for sample in family.samples
        if sample.name == metric
    }
    assert values == {adapter.name for adapter in KINDS}  # chat, responses, anthropic, gemini


def test_panels_have_unique_ids_and_a_datasource():
    panels = json.loads(DASHBOARD.read_text(encoding="utf-8"))["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    assert all(p.get("datasource") for p in panels if p["type"] != "row")


def test_every_label_the_dashboard_breaks_down_by_is_served(tmp_path):
    """A label the gateway does not put on a metric makes its panel one unlabelled series (the
    latency panels "by route" showed one line while the histograms had no route)."""
    with all_protocols(tmp_path) as gateway:
        one_of_each(gateway)
        text = httpx.get(gateway.url + "/metrics").text
    carried: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            carried.setdefault(sample.name, set()).update(sample.labels)
    for needed in (
        "loopguard_requests_total",
        "loopguard_gateway_overhead_seconds_bucket",
        "loopguard_upstream_seconds_bucket",
    ):
        assert needed in carried, f"no traffic reached {needed}"
    missing = {
        name: sorted(labels - carried[name])
        for name, labels in labels_queried().items()
        if name in carried and labels - carried[name]
    }  # metrics with samples after this traffic
    assert not missing, f"labels the dashboard queries but /metrics does not carry: {missing}"
