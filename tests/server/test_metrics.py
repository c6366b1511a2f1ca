"""/metrics after real conversations through a real gateway, read with prometheus-client's parser."""

from __future__ import annotations

import types
from dataclasses import replace

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from support.agent import Agent
from support.guarded import guarded
from support.looping import recovering, stubborn
from support.policies import ladder_policy
from support.upstream import Reply

from gateway.detectors import REGISTRY
from gateway.detectors.base import Detector
from gateway.metrics.collectors import GatewayCollector
from gateway.metrics.recovery import RecoveryMonitor
from gateway.metrics.registry import GatewayMetrics

CHAT = "/v1/chat/completions"


def scrape(url: str) -> dict[tuple[str, frozenset], float]:
    response = httpx.get(url + "/metrics")
    assert response.status_code == 200 and response.headers["content-type"].startswith("text/plain")
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(response.text)
        for s in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


MODEL_S = 0.25  # each answer's wait: the upstream's time is then known to exceed the gateway's


def slow_stubborn(request: dict) -> Reply:
    return replace(stubborn()(request), delay=MODEL_S)


@pytest.mark.parametrize("stream", [False, True])
def test_a_looping_conversation_in_numbers(tmp_path, stream):
    with guarded(slow_stubborn, tmp_path) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}, stream=stream).run("go")
        samples = scrape(gw.url)
    for action in ("warn", "reject", "terminate"):
        assert (
            value(samples, "loopguard_interventions_total", detector="no_progress", action=action, shadow="false") == 1
        )
    assert value(samples, "loopguard_requests_total", route="/v1/chat/completions", status="200") == 4
    assert value(samples, "loopguard_gateway_overhead_seconds_count", route="chat") == 4
    assert value(samples, "loopguard_upstream_seconds_count", route="chat") == 4
    upstream_s = value(samples, "loopguard_upstream_seconds_sum", route="chat")
    assert upstream_s >= 4 * MODEL_S  # the model's time is the upstream's, never the gateway's
    assert upstream_s > value(samples, "loopguard_gateway_overhead_seconds_sum", route="chat") > 0
    # The warned model proposed the same call again: the warning did not help.
    assert value(samples, "loopguard_warn_outcomes_total", detector="no_progress", outcome="persisted") == 1
    assert value(samples, "loopguard_warn_outcomes_total", detector="no_progress", outcome="recovered") == 0
    assert value(samples, "loopguard_policy_info", policy="test-ladder") == 1


def test_a_warned_run_that_changes_course_counts_as_recovered(tmp_path):
    with guarded(recovering(), tmp_path) as gw:
        agent = Agent(gw.client, tools={"read_file": lambda a: "same"})
        assert agent.run("read it") == "Stopping: here is what I found."
        assert value(scrape(gw.url), "loopguard_warns_pending") == 1  # settled by what comes next
        gw.upstream.responder = lambda request: Reply(content="Sure.")
        agent.run("thanks, anything else?")  # the session's next request
        samples = scrape(gw.url)
    assert value(samples, "loopguard_warn_outcomes_total", detector="no_progress", outcome="recovered") == 1
    assert value(samples, "loopguard_warn_outcomes_total", detector="no_progress", outcome="persisted") == 0
    assert value(samples, "loopguard_warns_pending") == 0


def test_warn_only_rollout_counts_held_back_actions_and_ignored_warnings(tmp_path):
    with guarded(stubborn(), tmp_path, ladder_policy("max_action: warn\n")) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=6)
        samples = scrape(gw.url)
    # Requests 4, 5, 6 carried counts 3, 4, 5: three warnings applied...
    assert value(samples, "loopguard_interventions_total", detector="no_progress", action="warn", shadow="false") == 3
    # ...while the ladder wanted reject and terminate (request and response paths).
    assert value(samples, "loopguard_interventions_total", detector="no_progress", action="reject", shadow="true") >= 1
    assert (
        value(samples, "loopguard_interventions_total", detector="no_progress", action="terminate", shadow="true") >= 1
    )
    assert value(samples, "loopguard_warn_outcomes_total", detector="no_progress", outcome="persisted") == 2


def test_requests_by_route_and_status(tmp_path):
    with guarded(stubborn(), tmp_path) as gw:
        assert httpx.post(gw.url + "/v1/chat/completions", content=b"{nope").status_code == 400
        assert httpx.get(gw.url + "/v1/models").status_code == 200
        assert httpx.get(gw.url + "/healthz").status_code == 200
        assert httpx.get(gw.url + "/nowhere").status_code == 404
        samples = scrape(gw.url)
    assert value(samples, "loopguard_requests_total", route="/v1/chat/completions", status="400") == 1
    assert value(samples, "loopguard_requests_total", route="/v1/*", status="200") == 1
    assert value(samples, "loopguard_requests_total", route="/healthz", status="200") == 1
    assert value(samples, "loopguard_requests_total", route="other", status="404") == 1


def _raising(trace, settings):
    raise RuntimeError("detector bug")


def test_fail_open_errors_are_counted(tmp_path):
    registry = {**REGISTRY, "no_progress": Detector("no_progress", _raising, REGISTRY["no_progress"].settings)}
    with guarded(stubborn(), tmp_path, registry=registry) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=2)
        samples = scrape(gw.url)
    assert value(samples, "loopguard_fail_open_errors_total") >= 2
    assert value(samples, "loopguard_detector_errors_total", detector="no_progress") >= 2


def test_policy_reloads_and_rejected_edits(tmp_path):
    with guarded(stubborn(), tmp_path) as gw:
        holder = gw.gateway.policies
        holder.path.write_text(ladder_policy("# edited\nmax_action: warn\n"))
        holder.reload_if_changed()
        holder.path.write_text("version: 1\nmode: loud\n")
        holder.reload_if_changed()
        samples = scrape(gw.url)
    assert value(samples, "loopguard_policy_reloads_total") >= 1
    assert value(samples, "loopguard_policy_reload_errors_total") == 1


def test_state_degradations_read_from_any_store():
    metrics = GatewayMetrics()
    holder = types.SimpleNamespace(reloads=0, reload_errors=0, current=types.SimpleNamespace(name="p"))
    audit = types.SimpleNamespace(errors={}, sinks=[], find=lambda name: None)
    for store, expected in ((types.SimpleNamespace(degradations=7, evictions=2), 7), (object(), 0)):
        gateway = types.SimpleNamespace(store=store, policies=holder, audit=audit)
        found = {m.name: m for m in GatewayCollector(gateway, metrics).collect()}
        assert found["loopguard_state_degradations"].samples[0].value == expected


def test_each_app_has_its_own_registry(tmp_path):
    with guarded(stubborn(), tmp_path) as first, guarded(stubborn(), _mkdir(tmp_path / "second")) as second:
        Agent(first.client, tools={"read_file": lambda a: "same"}).run("go", max_steps=2)
        assert value(scrape(first.url), "loopguard_requests_total", route="/v1/chat/completions", status="200") == 2
        assert value(scrape(second.url), "loopguard_requests_total", route="/v1/chat/completions", status="200") == 0


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _warn(count: int, detector: str = "no_progress", tool: str = "read_file"):
    from gateway.detectors.base import Finding
    from gateway.policy.actions import Action
    from gateway.policy.engine import Judgement

    finding = Finding(detector, count, tuple(range(1, count + 1)), (tool,), "")
    return Judgement(Action.WARN, Action.WARN, finding, (finding,))


def test_recovery_monitor_settles_quiet_sessions_and_stays_bounded():
    outcomes: list[tuple[str, str]] = []
    clock = Clock()
    monitor = RecoveryMonitor(lambda d, o: outcomes.append((d, o)), max_sessions=2, settle_s=60, clock=clock)
    monitor.judged("a", _warn(3))
    clock.now = 61
    monitor.expire()
    assert outcomes == [("no_progress", "recovered")]  # no follow-up: the agent stopped
    for session in "bcd":
        monitor.judged(session, _warn(3, detector="cycle"))
    assert len(monitor) == 2 and outcomes[-1] == ("cycle", "recovered")  # LRU bound
    monitor.judged("c", _warn(4, detector="cycle"))  # same pattern, higher count
    monitor.judged("d", _warn(3, detector="cycle", tool="other"))  # a different tool
    assert outcomes[-2:] == [("cycle", "persisted"), ("cycle", "recovered")]


def _mkdir(path):
    path.mkdir()
    return path


def test_requests_relayed_unjudged_are_counted_by_route_family(tmp_path):
    with guarded(lambda r: Reply(content="fine"), tmp_path) as gw:
        httpx.get(gw.url + "/v1/responses/resp_1")  # the Responses API's sub-routes pass through
        httpx.delete(gw.url + "/v1/responses/resp_1")
        httpx.get(gw.url + "/v1/models")
        httpx.get(gw.url + "/v1/made-up-route/x")
        gw.client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        samples = scrape(gw.url)
    assert value(samples, "loopguard_unguarded_requests_total", family="responses") == 2
    assert value(samples, "loopguard_unguarded_requests_total", family="models") == 1
    assert value(samples, "loopguard_unguarded_requests_total", family="other") == 1
    assert value(samples, "loopguard_unguarded_requests_total", family="chat") == 0  # judged


def test_a_scrape_asking_for_names_answers_only_those_series(tmp_path):
    with guarded(stubborn(), tmp_path) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go")
        whole = scrape(gw.url)
        asked = ("loopguard_interventions_total", "loopguard_fail_open_errors_total")
        answer = httpx.get(gw.url + "/metrics", params=[("name[]", name) for name in asked])
        unknown = httpx.get(gw.url + "/metrics", params={"name[]": "no_such_metric"})
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    families = list(text_string_to_metric_families(answer.text))
    samples = {(s.name, frozenset(s.labels.items())): s.value for family in families for s in family.samples}
    # whole metrics, each with all its series (a counter's ``_created`` too), and nothing else
    read = {family.name.removesuffix("_created") for family in families}  # the text format's own family
    assert read == {name.removesuffix("_total") for name in asked}
    assert samples == {key: v for key, v in whole.items() if key in samples}
    assert {name for name, _ in samples} >= set(asked)
    assert value(samples, "loopguard_interventions_total", detector="no_progress", action="reject", shadow="false") == 1
    assert unknown.status_code == 200 and not unknown.text.strip()
