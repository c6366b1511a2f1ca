"""Volatile values in results (harness lines, random-looking tokens) and in arguments, the
target a call acts on, and a refusal's shape without the attempt it echoes."""

from __future__ import annotations

import json

import pytest

from gateway.trace.failure import failure_shape
from gateway.trace.normalize import args_info, normalize_result, result_info
from gateway.trace.settings import TraceSettings
from gateway.trace.target import command_head

S = TraceSettings()


def same_result(a: str, b: str, settings: TraceSettings = S) -> bool:
    return result_info(a, settings).hash == result_info(b, settings).hash


def same_args(a: dict, b: dict, settings: TraceSettings = S) -> bool:
    return args_info(json.dumps(a), settings).hash == args_info(json.dumps(b), settings).hash


# --- results ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Chunk ID: 3f2a1b\nWall time: 0.0021 seconds\nProcess exited with code 0\nOriginal token count: 12\nOutput:\nhi",
            "Chunk ID: 9c04e7\nWall time: 0.1533 seconds\nProcess exited with code 0\nOriginal token count: 14\nOutput:\nhi",
        ),
        (
            "Process running with session ID 4411\nOutput:\nserving",
            "Process running with session ID 912\nOutput:\nserving",
        ),
        ("worker pid 4121 started\ntokens: 812", "worker pid 77 started\ntokens: 1290"),
        ("[1] 12345\nstarted", "[1] 998\nstarted"),
        ("real\t0m0.004s\nok", "real\t0m1.250s\nok"),
        ("request a9Xk2Lm4Pq served", "request Z8c3Vb7Nm1 served"),  # a random token where another was
    ],
)
def test_harness_lines_and_random_tokens_do_not_make_a_result_new(a, b):
    assert same_result(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            "Chunk ID: 3f2a1b\nProcess exited with code 0\nOutput:\nhi",
            "Chunk ID: 3f2a1b\nProcess exited with code 1\nOutput:\nhi",
        ),
        ("Chunk ID: 3f2a1b\nOutput:\n1733100000123", "Chunk ID: 9c04e7\nOutput:\n1733100000456"),  # a clock is content
        ("built python3 with sha256", "built python2 with sha512"),  # words with digits are not random
        ("3 files changed", "4 files changed"),
    ],
)
def test_what_the_command_said_still_counts(a, b):
    assert not same_result(a, b)


def test_random_tokens_can_be_kept():
    settings = TraceSettings(scrub_random_tokens=False)
    assert not same_result("request a9Xk2Lm4Pq served", "request Z8c3Vb7Nm1 served", settings)
    assert normalize_result("id 3f2a1b", S) == "id <v>"


# --- arguments ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (
            {"path": "a.txt", "request_id": "0b9e2a7c-1f3d-4c5e-9a8b-7c6d5e4f3a2b"},
            {"path": "a.txt", "request_id": "5e4f3a2b-7c6d-4c5e-9a8b-0b9e2a7c1f3d"},
        ),
        ({"account": "acct-7", "nonce": "9e3779b97f4a7c15"}, {"account": "acct-7", "nonce": "3c6ef372fe94f82a"}),
        (
            {"calendar": "team", "sent_at": "2026-12-02T05:01:13Z"},
            {"calendar": "team", "sent_at": "2026-12-02T05:09:40Z"},
        ),
        (
            {"user": "u-17", "signature": "dGhpcyBpcyBhIHRva2VuMTIzNDU2"},
            {"user": "u-17", "signature": "QmFzZTY0VG9rZW5Ob25jZTk4NzY1"},
        ),
        ({"q": "x", "meta": {"ts": 1733115600}}, {"q": "x", "meta": {"ts": 1733115999}}),
        ({"note": "retry at 2026-12-02T05:01:13Z please"}, {"note": "retry at 2026-12-02T06:00:00Z please"}),
    ],
)
def test_volatile_values_in_arguments_are_ignored_when_comparing(a, b):
    assert same_args(a, b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ({"order_id": "0b9e2a7c-1f3d-4c5e-9a8b-7c6d5e4f3a2b"}, {"order_id": "5e4f3a2b-7c6d-4c5e-9a8b-0b9e2a7c1f3d"}),
        ({"command": "git show 9e3779b97f4a7c15"}, {"command": "git show 3c6ef372fe94f82a"}),
        (
            {"path": "/tmp/0b9e2a7c-1f3d-4c5e-9a8b-7c6d5e4f3a2b.log"},
            {"path": "/tmp/5e4f3a2b-7c6d-4c5e-9a8b-0b9e2a7c1f3d.log"},
        ),
        ({"time": "19:00", "party": 2}, {"time": "20:00", "party": 2}),
        ({"path": "a.txt", "seed": 1}, {"path": "a.txt", "seed": 2}),
    ],
)
def test_values_that_name_what_to_act_on_are_kept(a, b):
    assert not same_args(a, b)


def test_argument_scrubbing_can_be_switched_off():
    settings = TraceSettings(volatile_arg_keys=(), volatile_arg_values=False)
    a, b = {"path": "a", "nonce": "9e3779b97f4a7c15"}, {"path": "a", "nonce": "3c6ef372fe94f82a"}
    assert not same_args(a, b, settings)


# --- targets ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "target"),
    [
        ({"file_path": "/repo/a.py", "old_string": "x", "new_string": "y"}, "/repo/a.py"),
        ({"command": "str_replace", "path": "/repo/a.py", "old_str": "x"}, "str_replace /repo/a.py"),
        ({"command": "view", "path": "/repo/a.py"}, "view /repo/a.py"),
        ({"url": "https://x.example/a", "headers": {"A": "b"}}, "https://x.example/a"),
        ({"element": "Place order button", "ref": "e41"}, "Place order button"),
        ({"query": "acme refunds", "num": 5}, "acme refunds"),
        ({"command": "cd /app && python run.py --lr 0.1"}, "$ /app/run.py"),  # the script, where it is
        ({"cmd": ["bash", "-lc", "cat a.txt"]}, "$ a.txt"),  # a shell command's target is its file
        ({"command": "head -n 5 a.txt"}, "$ a.txt"),
        ({"command": "npm test -- --watch=false"}, "$ npm test"),  # no file: its stable head
        ({"order_id": "#W1"}, ""),
    ],
)
def test_the_target_of_a_call(args, target):
    assert args_info(json.dumps(args), S).target == target


@pytest.mark.parametrize(
    ("command", "head"),
    [
        ("python -m pytest -q tests/x.py", "python -m pytest"),
        ("pytest -q tests/test_io.py", "pytest tests/test_io.py"),
        ("npm install --force", "npm install"),
        ('curl -s -H "X: y" http://x/admin', "curl http://x/admin"),
        ("sed -n '1,50p' src/a.py", "sed src/a.py"),
        ("tmux split-window -h", "tmux split-window"),
        ('git commit -m "fix bug"', "git commit"),
        ("FOO=1 make test", "make test"),
        ("ls | grep x", "ls"),
        ('echo "unbalanced', 'echo "unbalanced'),
    ],
)
def test_a_shell_command_head_leaves_out_flags(command, head):
    assert command_head(command) == head


# --- failure shapes -----------------------------------------------------------------------------


def refusal(old: str) -> str:
    return f"ERROR:\nNo replacement was performed, old_str `{old}` did not appear verbatim in /w/a.py."


def test_a_refusal_echoing_its_attempt_has_the_same_shape_for_every_attempt():
    shapes = {
        failure_shape(refusal(old), {"path": "/w/a.py", "old_str": old}, "") for old in ("x = 1", "y = 22", "return z")
    }
    assert len(shapes) == 1


def test_echoed_lines_are_dropped_with_their_line_numbers():
    code = "def f():\n    return 1"
    a = failure_shape("Syntax error at line 40\n40: def f():\n41:     return 1\nnot applied", {"replacement": code}, "")
    b = failure_shape(
        "Syntax error at line 12\n12: def g():\n13:     return 2\nnot applied",
        {"replacement": "def g():\n    return 2"},
        "",
    )
    assert a == b == "syntax error at line # not applied"


def test_another_refusal_has_another_shape():
    assert failure_shape(refusal("x"), {"old_str": "x"}, "") != failure_shape("Permission denied", {"old_str": "x"}, "")
