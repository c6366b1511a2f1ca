"""Every recorded CLI version (tests/fixtures/agents/, one table) read through the shipped default
policy, without starting the CLI: its own requests are sent as it sent them (route, User-Agent,
body) to a real gateway in front of scripted models, and runs built from its real rounds are too.

For each version: the gateway reads every request through the version's profile (its
``x-loopguard-profile`` header); the results the session recorded are read as what they were
(success envelopes are no failure, failures are); a poll of 8 looks whose output moves is never
stopped; a loop made of its real failing rounds is warned, then stopped.
"""

from __future__ import annotations

import itertools

import pytest
from support.cli_runs import MAX_EXECUTED, default_policy, error_mode_policy
from support.clis_record import FAILED, NOTES, SUCCEEDED
from support.recorded import Recording, cycled, recordings, replaced
from support.recorded_gateway import replaying

from gateway.policy.loader import load_shipped_policy
from gateway.policy.strict_yaml import shipped_profiles
from gateway.protocols.registry import BY_NAME
from gateway.trace.builder import build_trace
from gateway.trace.model import Status

RECORDINGS = recordings()
STOPPED = ("reject", "terminate")
LOOP_ROUNDS = 10  # a loop nobody stops runs this long; it must be stopped well before


@pytest.fixture(scope="module")
def gateway(tmp_path_factory):
    with replaying(tmp_path_factory.mktemp("recorded"), default_policy()) as replayer:
        yield replayer


def by_name(recording: Recording) -> str:
    return recording.name


VERSIONED = ("claude_code", "codex", "gemini_cli", "qwen_code", "copilot_cli", "cline")  # npm CLIs


def test_every_cli_has_two_recorded_versions():
    versions: dict[str, set[str]] = {}
    for recording in RECORDINGS:
        versions.setdefault(recording.client, set()).add(recording.version)
    assert {c: len(versions.get(c, ())) >= 2 for c in VERSIONED} == dict.fromkeys(VERSIONED, True), versions


@pytest.mark.parametrize("recording", RECORDINGS, ids=by_name)
def test_every_request_it_sent_is_read_through_its_profile(gateway, recording):
    sent = list(recording.sent())
    _, rounds = recording.parts()
    answered = gateway.send(recording, sent, [*rounds, None])  # its model's next call, then its answer
    assert [a.status for a in answered] == [200] * len(answered)
    assert {a.profile for a in answered} == {recording.client}
    assert not [a.action for a in answered if a.action in STOPPED]  # its session is no loop


@pytest.mark.parametrize("recording", RECORDINGS, ids=by_name)
def test_its_results_are_read_as_what_they_were(recording):
    """The session's last request as the gateway reads it: each result a failure exactly when
    the step failed (a success envelope's ``Exit Code: 0``, ``Signal: 0`` or ``(none)`` is none)."""
    adapter = BY_NAME[recording.wire.name].build()
    body = recording.body
    conv = adapter.requests.conversation(body, adapter.requests.items(body))
    policy = load_shipped_policy("default").resolve().for_agent(conv, recording.headers.get("user-agent", ""))
    assert policy.profile == recording.client
    events = build_trace(conv, policy.trace_settings).events
    assert len(events) == len(recording.steps)
    read = {(k, e.tool, e.status) for k, e in zip(recording.steps, events)}
    wrong = [r for r in read if (r[0] in FAILED) != (r[2] is Status.ERROR) or r[2] is Status.MISSING]
    assert not wrong, [(k, e.tool, e.status, e.result) for k, e in zip(recording.steps, events)]
    assert set(recording.steps) <= FAILED | SUCCEEDED


def moving_poll(recording: Recording) -> list[list]:
    """Its recorded ``cat notes.txt`` round looked at 8 times while a job writes its progress
    there: the same command, its first line new each time (the last says done). Only the line
    is replaced: a version that pads its lines (Gemini CLI 0.10's terminal) keeps its padding."""
    shell = recording.rounds_of("shell_ok")[0]
    first = NOTES.split("\n", 1)[0]
    polls = [f"job step {k + 1}/8 running" if k < 7 else "job done" for k in range(8)]
    return [replaced(r, {first: poll}) for r, poll in zip(cycled([shell], 8), polls)]


@pytest.mark.parametrize("recording", RECORDINGS, ids=by_name)
def test_a_poll_whose_output_moves_is_never_stopped(gateway, recording):
    answered = gateway.run(recording, moving_poll(recording))
    assert [a.action for a in answered] == ["pass"] * 8


LOOPS = ["shell_fail", "edit_refused"]


@pytest.mark.parametrize(
    "recording, kind",
    [(r, k) for r, k in itertools.product(RECORDINGS, LOOPS) if r.rounds_of(k)],
    ids=lambda v: v if isinstance(v, str) else by_name(v),
)
def test_a_loop_of_its_real_failures_is_warned_then_stopped(gateway, recording, kind):
    """The same failing call again and again, each time with one of the envelopes the version
    really wrote for it (two failing commands were recorded: what differs between them is what
    its profile must see through)."""
    rounds = cycled(recording.rounds_of(kind), LOOP_ROUNDS)
    actions = [a.action for a in gateway.run(recording, rounds)]
    stopped = next((k for k, a in enumerate(actions) if a in STOPPED), None)
    assert stopped is not None and stopped < MAX_EXECUTED, actions
    assert "warn" in actions[:stopped], actions


@pytest.fixture(scope="module")
def error_mode(tmp_path_factory):
    with replaying(tmp_path_factory.mktemp("error-mode"), error_mode_policy()) as replayer:
        yield replayer


@pytest.mark.parametrize("recording", RECORDINGS, ids=by_name)
def test_in_error_mode_its_loop_ends_the_way_its_client_takes_as_final(error_mode, recording):
    """With ``terminate.mode: error`` a run ends with the protocol's error, unless the profile
    says its client takes an error for a transient one and retries it (``terminate.error:
    answer``): its runs end with the model's own answer instead."""
    profile = next(p for p in shipped_profiles() if p.name == recording.client)
    error_mode.run(recording, cycled(recording.rounds_of("shell_fail"), LOOP_ROUNDS))
    ended = [e["terminate"] for e in error_mode.interventions() if e["action"] == "terminate"]
    assert ended[:1] == ["answer" if profile.terminate.error == "answer" else "error"], ended
