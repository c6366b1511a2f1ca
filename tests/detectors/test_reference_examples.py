"""Every example of three reference loop guards (a doom-loop guard with window 6 and threshold 3,
WeClaw's LoopDetector and OpenClaw's tool-loop detection), with the settings that reproduce each
one's numbers, and what the shipped defaults make of the same histories."""

from __future__ import annotations

import json

import pytest
from loop_traces import action, actions, count, detect, paced, propose, trace_of

from gateway.detectors import (
    CycleSettings,
    ExactRepeatSettings,
    NoProgressSettings,
    SimilarRepeatSettings,
    ToolRoundsSettings,
    UnknownToolSettings,
)
from gateway.policy.actions import REJECT_MARKER, Action
from gateway.trace.model import VETO_MARKER
from gateway.trace.normalize import result_info
from gateway.trace.settings import TraceSettings

PASS, WARN, REJECT, TERMINATE = Action.PASS, Action.WARN, Action.REJECT, Action.TERMINATE


def jaccard3(a: str, b: str) -> float:
    sa = {a[i : i + 3] for i in range(len(a) - 2)}
    sb = {b[i : i + 3] for i in range(len(b) - 2)}
    return len(sa & sb) / len(sa | sb)


# --- the doom-loop guard (window 6, threshold 3) -----------------------------------------------
# window 6, threshold 3 (the 3rd repeat), exact (tool, args hash) or 3-gram Jaccard >= 0.8
# for args >= 50 chars, check_background_tasks exempt; on detection the runtime writes an error
# observation and aborts the round: reject.

DOOM_EXACT = ExactRepeatSettings(
    window=6,
    consecutive=False,
    reset_on_progress=False,
    skip_polling=False,
    warn_at=None,
    reject_at=3,
    exempt_tools=frozenset({"check_background_tasks"}),
)
DOOM_FUZZY = SimilarRepeatSettings(
    window=6,
    metric="jaccard3",
    min_similarity=0.8,
    min_length=50,
    compare="latest",
    results="any",
    skip_polling=False,
    warn_at=None,
    reject_at=3,
    exempt_tools=frozenset({"check_background_tasks"}),
)
DOOM_ROUNDS = ToolRoundsSettings(terminate_at=16)  # a cap of 15 rounds: the 16th round is stopped

X = ("get_quote", {"symbol": "600519"}, "price 1700")


def other(i: int):
    return ("search_news", {"q": f"topic {i}"}, f"news {i}")


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        ([X, other(1), X, other(2), X], 3),  # 3 in the window, not consecutive
        ([X, other(1), other(2), other(3), X, X], 3),  # window of 6 still holds the first X
        ([X, other(1), other(2), other(3), other(4), X, X], 2),  # the first X left the window
        ([X, X], 2),
    ],
)
def test_doom_loop_guard_window_6_threshold_3(history, expected):
    trace = trace_of(*history)
    assert count("exact_repeat", trace, DOOM_EXACT) == expected
    assert action("exact_repeat", trace, DOOM_EXACT) == (REJECT if expected >= 3 else PASS)


def test_doom_loop_guard_fuzzy_jaccard_for_long_arguments():
    queries = [
        {"sql": f"SELECT id, name, email FROM customers WHERE region = 'EU' ORDER BY id LIMIT {n}"}
        for n in (50, 60, 70)
    ]
    texts = [json.dumps(q) for q in queries]
    assert min(len(t) for t in texts) >= 50 and jaccard3(texts[0], texts[2]) >= 0.8
    trace = trace_of(*[("sql", q, f"{i} rows") for i, q in enumerate(queries)])
    assert count("exact_repeat", trace, DOOM_EXACT) == 0  # no finding
    assert count("similar_repeat", trace, DOOM_FUZZY) == 3
    assert action("similar_repeat", trace, DOOM_FUZZY) == REJECT


def test_doom_loop_guard_short_arguments_only_match_exactly():
    queries = [{"q": "weather in paris today"}, {"q": "weather in paris today?"}, {"q": "weather in paris today!"}]
    texts = [json.dumps(q) for q in queries]
    assert max(len(t) for t in texts) < 50 and jaccard3(texts[0], texts[1]) >= 0.8
    trace = trace_of(*[("web_search", q, "no results") for q in queries])
    assert count("similar_repeat", trace, DOOM_FUZZY) == 0


def test_doom_loop_guard_check_background_tasks_is_exempt():
    trace = trace_of(*[("check_background_tasks", {}, "task 7: running")] * 6)
    assert detect("exact_repeat", trace, DOOM_EXACT) is None
    assert detect("similar_repeat", trace, DOOM_FUZZY) is None
    # The shipped defaults let a poll that waits repeat too, up to the polling ladder (OpenClaw
    # caps endless polls); one that asks again without waiting is a busy loop, on the normal one.
    assert actions(paced(trace)) == {}
    assert actions(trace) == {"no_progress": Action.REJECT}


def test_doom_loop_guard_max_tool_rounds_15():
    trace = trace_of(*[other(i) for i in range(15)])
    assert action("tool_rounds", trace, DOOM_ROUNDS) == PASS
    assert action("tool_rounds", propose(trace, "search_news", {"q": "topic 16"}), DOOM_ROUNDS) == TERMINATE
    # Off by default: healthy coding agents make far more rounds than 15.
    assert detect("tool_rounds", trace_of(*[other(i) for i in range(300)])) is None


# --- WeClaw LoopDetector ------------------------------------------------------------------
# window 8; exact = the last 3 calls identical; approximate = the last 3 calls of one tool with
# 1 - edit distance / max length > 0.85 pairwise; oscillation A-B-A-B on names; the response
# ladder WARN -> REJECT -> TERMINATE on successive detections = counts 3/4/5 (oscillation 4/5/6).

WECLAW_EXACT = ExactRepeatSettings(
    window=8,
    consecutive=True,
    reset_on_progress=False,
    skip_polling=False,
    warn_at=3,
    reject_at=4,
    terminate_at=5,
    exempt_tools=frozenset(),
)
WECLAW_SIMILAR = SimilarRepeatSettings(
    window=8,
    consecutive=True,
    metric="levenshtein",
    min_similarity=0.85,
    strict=True,
    compare="chain",
    results="any",
    skip_polling=False,
    warn_at=3,
    reject_at=4,
    terminate_at=5,
    exempt_tools=frozenset(),
)
WECLAW_CYCLE = CycleSettings(
    window=8,
    key="name",
    stable_results="ignore",
    periods=(2, 3, 4),
    skip_polling=False,
    warn_at=4,
    reject_at=5,
    terminate_at=6,
    exempt_tools=frozenset(),
)

WRITE = ("file.write", {"path": "config.toml", "content": "[server]\nport = 8080\n"}, "Error: permission denied")
EARLIER = [("file.read", {"path": "README.md"}, "# app"), ("file.list", {"dir": "."}, "config.toml README.md")]


@pytest.mark.parametrize(("repeats", "expected"), [(2, PASS), (3, WARN), (4, REJECT), (5, TERMINATE)])
def test_weclaw_file_write_permission_denied(repeats, expected):
    trace = trace_of(*EARLIER, *[WRITE] * repeats)  # steps 3, 4, 5 ... as in WeClaw's example
    assert action("exact_repeat", trace, WECLAW_EXACT) == expected
    if repeats == 3:
        assert detect("exact_repeat", trace, WECLAW_EXACT).steps == (3, 4, 5)
        # The shipped defaults warn at the 3rd failure as well (same call, same failure).
        assert actions(trace) == {
            "no_progress": WARN,
            "error_repeat": WARN,
            "exact_repeat": WARN,
            "similar_repeat": WARN,
            "target_failure": WARN,
        }


def test_weclaw_exact_repeat_looks_at_the_last_three_only():
    trace = trace_of(WRITE, WRITE, EARLIER[0], WRITE, WRITE)
    assert count("exact_repeat", trace, WECLAW_EXACT) == 2


NPM_BASE = "cd /workspace/webapp && npm install package-a --save --no-audit --no-fund --loglevel=error"
NPM = [
    (
        "shell.execute",
        {"command": NPM_BASE, "description": "Install package-a for the web app", "timeout": 120000},
        "npm ERR! network timeout at: https://registry.npmjs.org/package-a",
    ),
    (
        "shell.execute",
        {
            "command": NPM_BASE + " --registry=https://r.npmjs.cn",
            "description": "Install package-a for the web app",
            "timeout": 120000,
        },
        "npm ERR! Error: timeout",
    ),
    (
        "shell.execute",
        {
            "command": NPM_BASE + " --registry=https://r.npmjs.cn --timeout=60000",
            "description": "Install package-a for the web app",
            "timeout": 120000,
        },
        "npm ERR! code ETIMEDOUT\nexit code 1",
    ),
]


def test_weclaw_npm_install_with_growing_flags():
    trace = trace_of(*EARLIER, *NPM)
    assert count("exact_repeat", trace, WECLAW_EXACT) == 0  # no finding
    finding = detect("similar_repeat", trace, WECLAW_SIMILAR)
    assert finding.count == 3 and finding.steps == (3, 4, 5)
    assert action("similar_repeat", trace, WECLAW_SIMILAR) == WARN
    # Defaults: indel similarity, every attempt failed -> warn; nothing stronger on a guess.
    # (Each attempt fails its own way, so target_failure sees no repeated failure yet.)
    assert actions(trace) == {"similar_repeat": WARN}


def test_weclaw_similar_needs_the_threshold_between_neighbours():
    plain = [
        ("shell.execute", {"command": "npm install package-a"}, "Error: network timeout"),
        ("shell.execute", {"command": "npm install left-pad"}, "Error: timeout"),
        ("shell.execute", {"command": "pip install requests"}, "Error"),
    ]
    assert count("similar_repeat", trace_of(*plain), WECLAW_SIMILAR) == 0


def oscillation(versions: int):
    steps = []
    for v in range(1, versions + 1):
        steps.append(("file.write", {"path": "a.py", "content": f"print('v{v}'"}, "Success"))
        steps.append(("shell.execute", {"command": "python a.py"}, f"Error: SyntaxError on line {v}"))
    return steps


@pytest.mark.parametrize(("calls", "expected"), [(3, PASS), (4, WARN), (5, REJECT), (6, TERMINATE)])
def test_weclaw_write_run_oscillation(calls, expected):
    trace = trace_of(*EARLIER, *oscillation(3)[:calls])  # steps 3..: write, run, write, run, ...
    assert action("cycle", trace, WECLAW_CYCLE) == expected
    if calls == 4:
        assert detect("cycle", trace, WECLAW_CYCLE).steps == (3, 4, 5, 6)


def test_weclaw_oscillation_whose_error_only_moves_a_line_is_the_same_failure_by_default():
    # Each write differs, and the error is the same one on another line: the shipped defaults
    # count the failure, not the writes (the WeClaw settings above call it oscillation).
    trace = trace_of(*EARLIER, *oscillation(4))
    assert actions(trace) == {"target_failure": WARN}


def test_an_oscillation_whose_errors_differ_is_progress_by_default():
    steps = []
    for v, error in enumerate(["NameError: name 'x' is not defined", "TypeError: unsupported operand", "ok"]):
        steps.append(("file.write", {"path": "a.py", "content": f"print('v{v}')"}, "Success"))
        steps.append(("shell.execute", {"command": "python a.py"}, f"Error: {error}" if error != "ok" else "v2"))
    assert actions(trace_of(*EARLIER, *steps)) == {}


def test_weclaw_fewer_than_three_calls_is_never_a_loop():
    trace = trace_of(WRITE, WRITE)
    assert action("exact_repeat", trace, WECLAW_EXACT) == PASS


# --- OpenClaw tool-loop detection --------------------------------------------------------


def test_openclaw_exec_results_ignore_volatile_runtime_metadata():
    settings = TraceSettings()

    def exec_result(**over):
        base = {
            "status": "completed",
            "exitCode": 0,
            "timedOut": False,
            "output": "3 files changed",
            "durationMs": 812,
            "pid": 4411,
            "sessionId": "s-1",
            "cwd": "/tmp/run-1",
        }
        return json.dumps({**base, **over})

    same = result_info(exec_result(), settings).hash
    assert result_info(exec_result(durationMs=90, pid=7, sessionId="s-2", cwd="/tmp/run-2"), settings).hash == same
    assert result_info(exec_result(exitCode=1), settings).hash != same
    assert result_info(exec_result(timedOut=True), settings).hash != same
    assert result_info(exec_result(output="4 files changed"), settings).hash != same


def test_openclaw_sent_message_results_ignore_per_call_ids():
    settings = TraceSettings()
    first = {
        "ok": True,
        "channel": "#ops",
        "messageId": "m_1001",
        "fileId": "f_77",
        "timestamp": "2025-03-01T10:00:00Z",
    }
    second = {
        "ok": True,
        "channel": "#ops",
        "messageId": "m_1002",
        "fileId": "f_78",
        "timestamp": "2025-03-01T10:00:09Z",
    }
    assert result_info(json.dumps(first), settings).hash == result_info(json.dumps(second), settings).hash
    text1 = "Sent message 1b4e28ba-2fa1-11d2-883f-0016d3cca427 at 2025-03-01T10:00:00Z (took 120ms)"
    text2 = "Sent message 6fa459ea-ee8a-3ca4-894e-db77e160355e at 2025-03-01T10:05:42Z (took 95ms)"
    assert result_info(text1, settings).hash == result_info(text2, settings).hash
    # ... so an agent sending the same message over and over is seen making no progress.
    send = [
        ("message.send", {"to": "#ops", "text": "deploy done"}, json.dumps({**first, "messageId": f"m_{i}"}))
        for i in range(3)
    ]
    assert count("no_progress", trace_of(*send)) == 3


def test_openclaw_per_run_scoping_a_new_user_message_resets_counts():
    loop = [("read_file", {"path": "a.py"}, "x = 1")] * 5
    first_run = trace_of(*loop)
    assert count("no_progress", first_run) == 5
    turns = first_run.turns
    second = trace_of(("read_file", {"path": "a.py"}, "x = 1"), user="thanks, now look again", prefix=turns)
    assert count("no_progress", second) == 0
    whole = trace_of(
        ("read_file", {"path": "a.py"}, "x = 1"),
        user="again",
        prefix=turns,
        settings=TraceSettings(scope="conversation"),
    )
    assert count("no_progress", whole) == 6


def test_openclaw_a_veto_note_is_not_a_new_user_message():
    turns = trace_of(*[("read_file", {"path": "a.py"}, "x = 1")] * 3).turns
    trace = trace_of(("read_file", {"path": "a.py"}, "x = 1"), user=f"{VETO_MARKER} stop repeating", prefix=turns)
    assert count("no_progress", trace) == 4
    assert VETO_MARKER == REJECT_MARKER


# OpenClaw defaults: warningThreshold 10, criticalThreshold 20, globalCircuitBreakerThreshold 30,
# historySize 30; critical vetoes the call (reject), the breaker ends the run (terminate).
OC_GENERIC = ExactRepeatSettings(
    window=30, reset_on_progress=False, warn_at=10, skip_polling=False, exempt_tools=frozenset()
)
OC_BREAKER = NoProgressSettings(window=30, warn_at=10, reject_at=20, terminate_at=30)
OC_PINGPONG = CycleSettings(window=30, key="args", stable_results="cap", warn_at=10, reject_at=20)
OC_UNKNOWN = UnknownToolSettings(warn_at=None, reject_at=10, terminate_at=None, window=30)


@pytest.mark.parametrize(("n", "expected"), [(9, PASS), (10, WARN), (19, WARN), (20, REJECT), (30, TERMINATE)])
def test_openclaw_thresholds_10_20_30(n, expected):
    trace = trace_of(*[("exec", {"command": "git status"}, "nothing to commit")] * n)
    assert action("no_progress", trace, OC_BREAKER) == expected
    assert action("exact_repeat", trace, OC_GENERIC) == (PASS if n < 10 else WARN)


@pytest.mark.parametrize(("n", "expected"), [(9, PASS), (10, WARN), (20, REJECT), (30, TERMINATE)])
def test_openclaw_known_poll_no_progress_is_the_default_polling_ladder(n, expected):
    # A poll that waits before it asks (a busy poll is judged on the normal ladder).
    trace = paced(trace_of(*[("check_background_tasks", {}, "build 42: running")] * n))
    assert action("no_progress", trace) == expected
    assert detect("no_progress", trace).ladder == "poll"


def pingpong(n: int, stable: bool):
    a = [("browser.click", {"selector": "#next"}, "page 2" if stable else f"page {i}") for i in range(n)]
    b = [("browser.back", {}, "page 1") for _ in range(n)]
    return [step for pair in zip(a, b) for step in pair]


def test_openclaw_ping_pong_critical_only_with_stable_results():
    assert action("cycle", trace_of(*pingpong(10, stable=True)), OC_PINGPONG) == REJECT
    unstable = trace_of(*pingpong(10, stable=False))
    assert action("cycle", unstable, OC_PINGPONG) == WARN
    assert detect("cycle", unstable, OC_PINGPONG).count == 19


def test_openclaw_unknown_tool_threshold():
    calls = [("delete_everything", {"n": i}, "Error: unknown tool delete_everything") for i in range(10)]
    assert action("unknown_tool", trace_of(*calls[:9], tools={"read_file"}), OC_UNKNOWN) == PASS
    assert action("unknown_tool", trace_of(*calls, tools={"read_file"}), OC_UNKNOWN) == REJECT


def test_openclaw_a_veto_is_never_progress():
    call = ("exec", {"command": "make deploy"}, "waiting for lock")
    vetoed = ("exec", {"command": "make deploy"}, f"{VETO_MARKER} this call was not run: it repeats")
    trace = trace_of(call, call, vetoed)
    assert trace.events[-1].vetoed
    assert count("no_progress", trace) == 3
    assert count("no_progress", propose(trace, "exec", {"command": "make deploy"})) == 4


def test_openclaw_history_size_bounds_the_count():
    trace = trace_of(*[("exec", {"command": "ls"}, "a b")] * 50)
    assert count("no_progress", trace, OC_BREAKER) == 30
