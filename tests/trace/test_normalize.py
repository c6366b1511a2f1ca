"""Canonical arguments, result normalization and hashing, and settings validation."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from gateway.trace.normalize import PLACEHOLDER, args_info, canonical_args, normalize_result, result_info, text_hash
from gateway.trace.settings import TraceSettings

S = TraceSettings()


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"b": 1, "a": 2}', '{"a":2,"b":1}'),
        ('{"z": {"d": [1, {"c": 1, "b": 2}]}, "a": "é"}', '{"a":"é","z":{"d":[1,{"b":2,"c":1}]}}'),
        ('{"task_progress": "- [x] step", "path": "a"}', '{"path":"a"}'),
        ('{"outer": {"task_progress": 1, "k": [{"task_progress": 2, "v": 3}]}}', '{"outer":{"k":[{"v":3}]}}'),
        ("ls -la", "ls -la"),
        ('{"broken": ', '{"broken": '),
        ("", ""),
        ("  [3, 1]  ", "[3,1]"),
        ('"just a string"', '"just a string"'),
    ],
)
def test_canonical_args(raw, expected):
    assert canonical_args(raw, S.ignore_arg_keys) == expected


def test_ignored_keys_are_exact_names():
    assert canonical_args('{"Task_Progress": 1}', S.ignore_arg_keys) == '{"Task_Progress":1}'


def test_deep_json_never_raises():
    deep = "[" * 5000 + "]" * 5000
    assert canonical_args(deep, S.ignore_arg_keys)
    assert normalize_result(deep, S)


def test_args_info_is_memoized_per_settings():
    settings = TraceSettings()
    first = args_info('{"a": 1}', settings)
    assert args_info('{"a": 1}', settings) is first
    assert first.hash == text_hash('{"a":1}') and len(first.hash) == 16


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("done in 3.2s", "done in 11s"),
        ("finished at 2025-01-02T03:04:05Z", "finished at 2025-02-03T10:11:12.123+02:00"),
        ("id 1b4e28ba-2fa1-11d2-883f-0016d3cca427 created", "id 6fa459ea-ee8a-3ca4-894e-db77e160355e created"),
        ("commit 9f1c2ab34de56f7890aa11bb22cc33dd", "commit 00ffeeddccbbaa998877665544332211"),
        ("updated 5 minutes ago", "updated 12 seconds ago"),
        (
            '{"ok": true, "pid": 1, "meta": {"request_id": "r1", "CWD": "/a"}}',
            '{"meta": {"CWD": "/b", "request_id": "r2"}, "pid": 2, "ok": true}',
        ),
        ("  same text\n", "same text"),
    ],
)
def test_volatile_parts_do_not_change_the_hash(a, b):
    assert result_info(a, S).hash == result_info(b, S).hash


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("3 failed, 17 passed", "2 failed, 18 passed"),
        ('{"exitCode": 0}', '{"exitCode": 1}'),
        ("2025-01-02T03:04:05Z", "2025-01-02T03:04:06Z"),  # nothing but a stamp: the stamp is the content
        ('{"time": "2025-01-02T03:04:05Z"}', '{"time": "2025-01-02T03:09:05Z"}'),
    ],
)
def test_real_differences_change_the_hash(a, b):
    assert result_info(a, S).hash != result_info(b, S).hash


def test_normalized_text():
    assert normalize_result('{"b": "took 3ms", "pid": 7, "a": 1}', S) == f'{{"a":1,"b":"took {PLACEHOLDER}"}}'


def test_large_results_are_scrubbed_at_the_edges_and_hashed_whole():
    settings = TraceSettings(scan_chars=64)
    middle = "x" * 500
    a = "started 2025-01-01T00:00:00Z\n" + middle + "\ndone in 3s"
    b = "started 2025-03-01T00:00:00Z\n" + middle + "\ndone in 9s"
    assert result_info(a, settings).hash == result_info(b, settings).hash
    c = "started 2025-01-01T00:00:00Z\n" + middle.replace("x", "y", 1) + "\ndone in 3s"
    assert result_info(c, settings).hash != result_info(a, settings).hash
    error_at_end = "line\n" * 200 + "Error: boom"
    assert result_info(error_at_end, settings).error


def test_unknown_tool_is_read_from_the_start_only():
    assert result_info("Error: unknown tool 'x'", S).unknown
    assert not result_info("a" * 400 + " unknown tool mentioned in a file", S).unknown


@pytest.mark.parametrize(
    "field", ["volatile_patterns", "error_patterns", "unknown_tool_patterns", "polling_args_patterns"]
)
def test_invalid_regex_is_a_validation_error_with_its_path(field):
    with pytest.raises(ValidationError) as info:
        TraceSettings(**{field: ["fine", "(unclosed"]})
    error = info.value.errors()[0]
    assert error["loc"] == (field, 1) and "invalid regular expression" in error["msg"]


def test_flags_that_would_break_the_union_are_refused():
    with pytest.raises(ValidationError):
        TraceSettings(error_patterns=["(?i)error"])


def test_settings_validate_from_policy_data():
    settings = TraceSettings.model_validate(
        json.loads(
            '{"scope": "conversation", "ignore_arg_keys": ["progress"], "volatile_keys": ["Seq"], "horizon": 100}'
        )
    )
    assert settings.volatile_key_set == frozenset({"seq"}) and settings.horizon == 100
    with pytest.raises(ValidationError):
        TraceSettings(horizon=0)
