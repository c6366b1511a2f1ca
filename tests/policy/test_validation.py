"""Every way a policy file can be wrong fails at load with the file, the key path and a reason."""

from __future__ import annotations

import textwrap

import pytest
from policy_fakes import REGISTRY

from gateway.policy import PolicyError, load_policy, load_policy_text

FILE = "policies/t.yaml"

CASES = [
    # (id, yaml body after "version: 1\nname: t\n", key path, reason fragment)
    ("unknown top key", "modee: shadow", "modee", "unknown key"),
    ("wrong type", "detectors:\n  repeat:\n    warn_at: lots", "detectors.repeat.warn_at", "valid integer"),
    ("unknown detector key", "detectors:\n  repeat:\n    windw: 3", "detectors.repeat.windw", "unknown key"),
    ("bad enum mode", "mode: enforcing", "mode", "'enforce' or 'shadow'"),
    ("bad enum max_action", "max_action: stop", "max_action", "'warn', 'reject' or 'terminate'"),
    ("bad enum scope", "scope: session", "scope", "'run' or 'conversation'"),
    ("unknown detector", "detectors:\n  nope: {}", "detectors.nope", "unknown detector"),
    ("detector block type", "detectors:\n  repeat: [1, 2]", "detectors.repeat", "expected a mapping"),
    ("exempt_tools as string", "exempt_tools: poll", "exempt_tools", "valid frozenset"),
    ("unknown placeholder", "messages:\n  warn: 'stop calling {tol}'", "messages.warn", "unknown placeholder {tol}"),
    ("template syntax", "messages:\n  terminate: 'stopped {tool'", "messages.terminate", "bad template syntax"),
    ("format spec", "messages:\n  warn: '{count:>4}'", "messages.warn", "format specs"),
    ("reject marker", "messages:\n  reject: 'rejected {tool}'", "messages.reject", "must start with '[loopguard]'"),
    ("warn marker", "messages:\n  warn: 'stop calling {tool}'", "messages.warn", "must start with '[LoopGuard'"),
    ("answer marker", "messages:\n  answer: 'answer now'", "messages.answer", "must start with '[LoopGuard'"),
    (
        "terminate mode",
        "interventions:\n  terminate:\n    mode: summary",
        "interventions.terminate.mode",
        "'answer', 'reply' or 'error'",
    ),
    (
        "answer timeout",
        "interventions:\n  terminate:\n    answer_timeout_s: 0",
        "interventions.terminate.answer_timeout_s",
        "greater than 0",
    ),
    ("language", "messages:\n  language: fr", "messages.language", "'en' or 'zh'"),
    (
        "placement",
        "interventions:\n  warn:\n    placement: header",
        "interventions.warn.placement",
        "'system', 'tool_result' or 'user'",
    ),
    (
        "max_reasks bool",
        "interventions:\n  reject:\n    max_reasks: true",
        "interventions.reject.max_reasks",
        "valid integer",
    ),
    (
        "status range",
        "interventions:\n  terminate:\n    status: 200",
        "interventions.terminate.status",
        "greater than or equal to 400",
    ),
    ("normalize unknown key", "normalize:\n  volatile_kes: [pid]", "normalize.volatile_kes", "unknown key"),
    ("normalize scope", "normalize:\n  scope: run", "normalize.scope", "top level"),
    (
        "normalize regex",
        "normalize:\n  error_patterns: ['ok', '(unclosed']",
        "normalize.error_patterns[1]",
        "invalid regular expression",
    ),
    ("agent unknown key", "agents:\n  - match: {header: a}\n    bogus: 1", "agents[0].bogus", "unknown key"),
    (
        "agent nested wrong type",
        "agents:\n  - match: {header: a}\n  - match: {header: b}\n    detectors:\n      repeat: {window: wide}",
        "agents[1].detectors.repeat.window",
        "valid integer",
    ),
    (
        "agent unknown detector",
        "agents:\n  - match: {model: 'gpt-*'}\n    detectors: {nope: false}",
        "agents[0].detectors.nope",
        "unknown detector",
    ),
    ("agent empty match", "agents:\n  - match: {}\n    mode: shadow", "agents[0].match", "at least one of"),
    ("agent missing match", "agents:\n  - mode: shadow", "agents[0].match", "Field required"),
    (
        "agent key hash",
        "agents:\n  - match: {api_key_sha256: abc}",
        "agents[0].match.api_key_sha256",
        "should match pattern",
    ),
    ("agent sets version", "agents:\n  - match: {header: a}\n    version: 2", "agents[0].version", "unknown key"),
    (
        "agent template",
        "agents:\n  - match: {header: a}\n    messages: {warn: '{nope}'}",
        "agents[0].messages.warn",
        "unknown placeholder {nope}",
    ),
]


@pytest.mark.parametrize(("body", "path", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_invalid_policy_names_file_key_and_reason(compile_policy, body, path, reason):
    with pytest.raises(PolicyError) as caught:
        compile_policy(body + "\n")
    err = caught.value
    assert (err.file, err.path) == (FILE, path)
    assert reason in err.reason
    assert str(err).startswith(f"{FILE}: {path}: ")


@pytest.mark.parametrize(
    ("text", "fragment", "line"),
    [
        ("version: 1\nmode: [shadow\n", "invalid YAML", 3),
        ("version: 1\nmode: shadow\n  max_action: warn\n", "invalid YAML", 3),
        ("version: 1\ndetectors:\n  repeat: {}\n  repeat: {warn_at: 2}\n", "duplicate key 'repeat'", 4),
        ("version: 1\n\tmode: shadow\n", "invalid YAML", 2),
    ],
    ids=["unclosed flow", "bad indent", "duplicate key", "tab"],
)
def test_yaml_syntax_errors_name_file_and_line(text, fragment, line):
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, FILE, REGISTRY)
    assert caught.value.line == line
    assert fragment in str(caught.value)
    assert str(caught.value).startswith(f"{FILE}: line {line}: ")


@pytest.mark.parametrize(
    ("text", "path", "reason"),
    [
        ("name: t\n", "version", "Field required"),
        ("version: 2\n", "version", "Input should be 1"),
        ("- version: 1\n", "", "a policy is a YAML mapping"),
        ("", "", "the file is empty"),
    ],
)
def test_document_level_errors(text, path, reason):
    with pytest.raises(PolicyError) as caught:
        load_policy_text(text, FILE, REGISTRY)
    assert (caught.value.path, caught.value.file) == (path, FILE)
    assert reason in str(caught.value)


def test_every_problem_is_reported_not_only_the_first(compile_policy):
    with pytest.raises(PolicyError) as caught:
        compile_policy("mode: loud\nmax_action: stop\n")
    assert [p for p, _ in caught.value.problems] == ["mode", "max_action"]
    assert str(caught.value).count(FILE) == 2


def test_unreadable_file_is_a_policy_error(tmp_path):
    missing = tmp_path / "missing.yaml"
    with pytest.raises(PolicyError, match="cannot read the file") as caught:
        load_policy(missing, REGISTRY)
    assert caught.value.file == str(missing)


def test_policy_error_is_a_value_error():
    assert issubclass(PolicyError, ValueError)


def test_a_minimal_policy_uses_every_default(compile_policy):
    policy = compile_policy("")
    eff = policy.resolve()
    assert (eff.mode, eff.max_action.label) == ("enforce", "terminate")
    assert eff.trace_settings.scope == "run"
    assert eff.interventions.warn.placement == "system"
    assert eff.interventions.reject.max_reasks == 2
    assert (eff.interventions.terminate.mode, eff.interventions.terminate.status) == ("answer", 422)
    assert eff.messages.language == "en"
    assert dict(eff.detector_settings) == {n: d.settings() for n, d in REGISTRY.items()}


def test_name_defaults_to_the_file_stem():
    policy = load_policy_text("version: 1\n", "somewhere/ops-team.yaml", REGISTRY)
    assert policy.name == "ops-team" and policy.resolve().name == "ops-team"


def test_detector_switches_and_empty_blocks(compile_policy):
    eff = compile_policy(
        textwrap.dedent("""\
        detectors:
          always: false
          poll:
          repeat: {window: 4}
        """)
    ).resolve()
    assert list(eff.detectors) == ["repeat", "poll"]  # registry order, "always" switched off
    assert eff.detector_settings["always"].enabled is False
    assert eff.detectors["poll"] == REGISTRY["poll"].settings()
    assert eff.detectors["repeat"].window == 4


def test_normalize_builds_trace_settings_with_scope(compile_policy):
    eff = compile_policy(
        textwrap.dedent("""\
        scope: conversation
        normalize:
          ignore_arg_keys: [task_progress, nonce]
          volatile_keys: [pid]
          error_patterns: ['^FAILED']
        """)
    ).resolve()
    ts = eff.trace_settings
    assert ts.scope == "conversation"
    assert ts.ignore_arg_keys == frozenset({"task_progress", "nonce"})
    assert ts.volatile_keys == ("pid",)
    assert ts.error_re.search("FAILED: boom")


def test_empty_sections_mean_nothing_set(compile_policy):
    """`agents:` with every entry commented out is YAML null; it must not be an error, and in an
    agents entry it must not wipe the global block."""
    policy = compile_policy("""\
        exempt_tools:
        detectors:
          repeat: {window: 4}
        agents:
          - match: {header: a}
            detectors:
            messages:
        """)
    assert policy.resolve(agent="a").detectors["repeat"].window == 4
    assert compile_policy("agents:\nnormalize:\n").rules == ()
