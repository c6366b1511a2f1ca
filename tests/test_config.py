"""Configuration: strict YAML, errors that say where, environment interpolation and overrides.

Operators edit this file by hand at 3 a.m.; every mistake must be reported with the file and the
dotted key path, and nothing unknown may be silently ignored (a typo'd key is a setting that
quietly does not apply).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.config import ConfigError, load_config
from gateway.protocols.anthropic.protocol import KIND as ANTHROPIC_KIND

ANTHROPIC = ANTHROPIC_KIND.build()


def write(tmp_path: Path, text: str, name: str = "loopguard.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_defaults_without_a_file():
    config = load_config(None, env={})
    assert (config.server.host, config.server.port) == ("127.0.0.1", 8080)
    assert config.upstream.base_url == "https://api.openai.com/v1"
    assert config.upstream.api_key is None
    assert config.logging.format == "json"


def test_empty_file_means_defaults(tmp_path):
    assert load_config(write(tmp_path, "# nothing set\n"), env={}) == load_config(None, env={})


def test_full_example_loads(tmp_path):
    path = write(
        tmp_path,
        """
server: {host: 0.0.0.0, port: 9000}
upstream:
  base_url: http://vllm:8000/v1
  api_key: sk-x
  timeout_s: 30
  headers: {OpenAI-Organization: org-1}
policy: policies/strict.yaml
limits: {max_body_bytes: 1048576}
logging: {format: console, level: debug}
""",
    )
    config = load_config(path, env={})
    assert config.server.port == 9000 and config.upstream.timeout_s == 30.0
    assert config.upstream.headers == {"OpenAI-Organization": "org-1"}
    assert config.limits.max_body_bytes == 1048576 and config.logging.level == "debug"


def test_shipped_example_config_is_valid():
    example = Path(__file__).parents[1] / "config.example.yaml"
    config = load_config(example, env={})
    assert config.upstream.base_url == "https://api.openai.com/v1"


BAD = {
    # yaml text -> the key path the error must name
    "unknown top-level key": ("servr:\n  port: 1\n", "servr"),
    "unknown nested key": ("upstream:\n  base_ur: http://x\n", "upstream.base_ur"),
    "unknown deep key": ("logging:\n  format: json\n  colour: true\n", "logging.colour"),
    "port not a number": ("server:\n  port: eighty\n", "server.port"),
    "port out of range": ("server:\n  port: 70000\n", "server.port"),
    "negative timeout": ("upstream:\n  timeout_s: -1\n", "upstream.timeout_s"),
    "zero body limit": ("limits:\n  max_body_bytes: 0\n", "limits.max_body_bytes"),
    "format not allowed": ("logging:\n  format: xml\n", "logging.format"),
    "level not allowed": ("logging:\n  level: verbose\n", "logging.level"),
    "headers not a mapping": ("upstream:\n  headers: [a, b]\n", "upstream.headers"),
    "header value not a string": ("upstream:\n  headers:\n    X-Num: 1\n", "upstream.headers.X-Num"),
    "section not a mapping": ("server: 8080\n", "server"),
    "policy not a string": ("policy: [a]\n", "policy"),
    # values HTTP cannot carry: caught at load instead of failing every request
    "header value with a line break": ('upstream:\n  headers: {X-Team: "a\\r\\nX-Injected: 1"}\n', "upstream.headers"),
    "header value not Latin-1": ("upstream:\n  headers: {X-Team: \u65e5\u672c}\n", "upstream.headers"),
    "header name not a token": ('upstream:\n  headers: {"X Team": a}\n', "upstream.headers"),
    "api key not Latin-1": ("upstream:\n  api_key: sk-\u65e5\n", "upstream.api_key"),
}


@pytest.mark.parametrize("case", BAD)
def test_invalid_config_names_file_and_key_path(tmp_path, case):
    text, key_path = BAD[case]
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert caught.value.file == str(path)
    assert caught.value.path == key_path
    assert str(path) in str(caught.value) and key_path in str(caught.value)


@pytest.mark.parametrize(
    "text, line",
    [
        ("server:\n  host: x\n port: 1\n", 3),  # bad indentation
        ("upstream:\n  base_url: http://x\n  headers: {a: b\nlogging: {}\n", 4),  # unclosed flow mapping
        ("server:\n  port: 1\n\tfoo: 1\n", 3),  # a tab
    ],
)
def test_yaml_syntax_error_names_file_and_line(tmp_path, text, line):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert str(path) in str(caught.value)
    assert f"line {line}" in str(caught.value)


def test_top_level_must_be_a_mapping(tmp_path):
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write(tmp_path, "- a\n- b\n"), env={})


def test_missing_file_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path / "nope.yaml", env={})
    assert "nope.yaml" in str(caught.value)


INTERPOLATION = {
    # template, env -> value of upstream.base_url
    "set": ("${UP}", {"UP": "http://a/v1"}, "http://a/v1"),
    "default used when unset": ("${UP:-http://d/v1}", {}, "http://d/v1"),
    "default used when empty": ("${UP:-http://d/v1}", {"UP": ""}, "http://d/v1"),
    "set wins over default": ("${UP:-http://d/v1}", {"UP": "http://a/v1"}, "http://a/v1"),
    "inside a string": ("http://${HOST}:${PORT:-8000}/v1", {"HOST": "vllm"}, "http://vllm:8000/v1"),
    "default containing colons and slashes": ("${UP:-https://x.example:443/v1}", {}, "https://x.example:443/v1"),
    "not a reference": ("http://a/$UP/{x}", {"UP": "no"}, "http://a/$UP/{x}"),
}


@pytest.mark.parametrize("case", INTERPOLATION)
def test_env_interpolation(tmp_path, case):
    template, env, expected = INTERPOLATION[case]
    path = write(tmp_path, f'upstream:\n  base_url: "{template}"\n')
    assert load_config(path, env=env).upstream.base_url == expected


def test_interpolated_numbers_and_nested_values(tmp_path):
    # Ports and limits come from the environment in containers; headers too.
    path = write(
        tmp_path,
        """
server: {port: "${PORT:-9000}"}
upstream:
  api_key: ${OPENAI_API_KEY}
  headers: {OpenAI-Project: "${PROJECT:-proj_default}"}
""",
    )
    config = load_config(path, env={"OPENAI_API_KEY": "sk-env"})
    assert config.server.port == 9000
    assert config.upstream.api_key == "sk-env"
    assert config.upstream.headers == {"OpenAI-Project": "proj_default"}


def test_interpolated_value_is_still_validated(tmp_path):
    path = write(tmp_path, 'server: {port: "${PORT}"}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={"PORT": "http"})
    assert caught.value.path == "server.port"


@pytest.mark.parametrize("text", ["", "upstream:\n  base_url: http://file/v1\n", "upstream:\n  timeout_s: 5\n"])
def test_upstream_base_url_env_override(tmp_path, text):
    path = write(tmp_path, text)
    env = {"LOOPGUARD_UPSTREAM_BASE_URL": "http://override:1234/v1"}
    config = load_config(path, env=env)
    assert config.upstream.base_url == "http://override:1234/v1"
    assert load_config(None, env=env).upstream.base_url == "http://override:1234/v1"


def test_relative_policy_is_relative_to_the_config_file(tmp_path, monkeypatch):
    path = write(tmp_path, "policy: packs/strict.yaml\n", name="etc/loopguard/config.yaml")
    monkeypatch.chdir(tmp_path)  # a different working directory must not matter
    assert Path(load_config(path, env={}).policy) == tmp_path / "etc/loopguard/packs/strict.yaml"
    relative = Path("etc/loopguard/config.yaml")  # the config path itself given relatively
    assert Path(load_config(relative, env={}).policy).resolve() == (tmp_path / "etc/loopguard/packs/strict.yaml")


def test_absolute_policy_is_kept(tmp_path):
    path = write(tmp_path, "policy: /opt/policies/mine.yaml\n")
    assert load_config(path, env={}).policy == "/opt/policies/mine.yaml"


def test_reads_the_process_environment_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("LG_TEST_UPSTREAM", "http://from-env/v1")
    monkeypatch.delenv("LOOPGUARD_UPSTREAM_BASE_URL", raising=False)
    path = write(tmp_path, 'upstream: {base_url: "${LG_TEST_UPSTREAM}"}\n')
    assert load_config(path).upstream.base_url == "http://from-env/v1"


def test_unset_variable_without_default_is_an_error_naming_it_and_the_key(tmp_path):
    # A typo'd variable must not quietly become "" (an empty api_key forwards the client's key).
    path = write(tmp_path, "upstream:\n  api_key: ${OPENAI_API_KEYY}\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={"OPENAI_API_KEY": "sk-x"})
    assert caught.value.path == "upstream.api_key"
    assert "OPENAI_API_KEYY" in caught.value.reason and str(path) in str(caught.value)


@pytest.mark.parametrize(
    "template, env, expected",
    [
        ("${EMPTY}", {"EMPTY": ""}, ""),  # set but empty is a deliberate value
        ("${MAYBE:-}", {}, ""),  # an explicit empty default allows unset
    ],
)
def test_empty_values_that_are_meant(tmp_path, template, env, expected):
    path = write(tmp_path, f'audit: {{jsonl_path: "x{template}"}}\n')
    assert load_config(path, env=env).audit.jsonl_path == "x" + expected


def test_unset_variable_in_a_list_names_the_index(tmp_path):
    path = write(tmp_path, "sessions:\n  headers: [x-a, '${HDR}']\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert caught.value.path == "sessions.headers.1" and "HDR" in caught.value.reason


def test_unset_variable_is_forgiven_where_the_env_override_replaces_it(tmp_path):
    path = write(tmp_path, "upstream:\n  base_url: ${UP}\n")
    config = load_config(path, env={"LOOPGUARD_UPSTREAM_BASE_URL": "http://o/v1"})
    assert config.upstream.base_url == "http://o/v1"


def test_all_problems_are_reported_at_once(tmp_path):
    path = write(
        tmp_path,
        """
server: {port: 70000}
upstream:
  api_key: ${MISSING_KEY}
  timeout_s: -1
logging: {level: verbose}
state: {bogus: 1, url: '${REDIS}'}
policy: no-such-pack
""",
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    paths = [p for p, _ in caught.value.problems]
    assert sorted(paths) == sorted(
        ["server.port", "upstream.api_key", "upstream.timeout_s", "logging.level", "state.bogus", "state.url", "policy"]
    )
    assert len(set(paths)) == len(paths)  # an unset variable's key is not reported twice
    lines = str(caught.value).splitlines()
    assert len(lines) == len(paths)
    for line, key in zip(lines, (p for p, _ in caught.value.problems)):
        assert line.startswith(f"{path}: {key}: ")
    assert (caught.value.path, caught.value.reason) == caught.value.problems[0]


@pytest.mark.parametrize("pack", ["default", "strict", "shadow", "warn-only"])
def test_policy_may_name_a_shipped_pack(tmp_path, pack):
    from gateway.policy.loader import shipped_policy_path

    config = load_config(write(tmp_path, f"policy: {pack}\n"), env={})
    assert Path(config.policy) == shipped_policy_path(pack)


def test_a_file_next_to_the_config_wins_over_a_pack_of_the_same_name(tmp_path):
    write(tmp_path, "version: 1\n", name="strict")
    config = load_config(write(tmp_path, "policy: strict\n"), env={})
    assert Path(config.policy) == tmp_path / "strict"


def test_unknown_pack_name_is_an_error_listing_the_packs(tmp_path):
    path = write(tmp_path, "policy: strictest\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={})
    assert caught.value.path == "policy"
    assert "strictest" in caught.value.reason and "strict" in caught.value.reason.split("(")[1]


def test_a_config_naming_a_pack_serves_with_it(tmp_path):
    from gateway.check import load_any

    _, policy = load_any(str(write(tmp_path, "policy: strict\n")))
    assert policy.name == "strict"


def test_an_unset_variable_as_the_policy_is_reported_once(tmp_path):
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, "policy: ${POLICY}\n"), env={})
    assert caught.value.problems == (("policy", caught.value.reason),) and "POLICY" in caught.value.reason


def _anthropic_base_url(config, env):
    """Where Anthropic traffic goes: the provider's setting, its env override, else the
    protocol's declared default (``UpstreamSpec``)."""
    return config.upstream.provider("anthropic", ANTHROPIC.declared.upstream.default_base_url, env=env).base_url


def test_anthropic_upstream_defaults_and_env_override(tmp_path):
    assert _anthropic_base_url(load_config(None, env={}), {}) == "https://api.anthropic.com"
    assert load_config(None, env={}).upstream.setting("anthropic", "api_key") is None
    env = {"LOOPGUARD_ANTHROPIC_BASE_URL": "http://claude-proxy:9000"}
    path = write(tmp_path, "upstream:\n  anthropic_base_url: http://file\n  anthropic_api_key: sk-ant-x\n")
    config = load_config(path, env=env)
    assert _anthropic_base_url(config, env) == "http://claude-proxy:9000"
    assert config.upstream.setting("anthropic", "api_key") == "sk-ant-x"
    assert config.upstream.base_url == "https://api.openai.com/v1"


def test_anthropic_api_key_must_be_sendable(tmp_path):
    with pytest.raises(ConfigError, match="anthropic_api_key"):
        load_config(write(tmp_path, 'upstream:\n  anthropic_api_key: "a\\nb"\n'), env={})
