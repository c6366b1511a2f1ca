"""Healthy repetitive work that must stay completely quiet under the shipped defaults.

Each history is judged by every registry detector after every step (the request path) and with
its next call proposed (the response path): no warn, no reject, no terminate, at any point.
The traps are those of gemini-cli's and OpenHands' false-positive reports.
"""

from __future__ import annotations

import json

import pytest
from loop_traces import actions, prefix, propose, trace_of

CODE_WORDS = [
    "def",
    "return",
    "self",
    "value",
    "items",
    "config",
    "request",
    "response",
    "cache",
    "user",
    "order",
    "payload",
    "handler",
    "result",
    "logger",
    "error",
    "timeout",
    "index",
]


def code(seed: int, lines: int = 40) -> str:
    """Deterministic, distinct source text with numbered lines, like a Read tool returns."""
    out = []
    for i in range(lines):
        a, b, c = (CODE_WORDS[(seed * 7 + i * k) % len(CODE_WORDS)] for k in (1, 3, 5))
        out.append(f"{seed * 1000 + i + 1:6d}\t    {a}_{b} = {c}({seed}, {i})")
    return "\n".join(out)


def paginated_reads():
    path = "/home/dev/repo/src/server/handlers.py"
    return [("Read", {"file_path": path, "offset": page * 200, "limit": 200}, code(page)) for page in range(15)]


def paginated_search():
    return [
        (
            "search_issues",
            {"query": "label:bug state:open", "page": n, "per_page": 30},
            json.dumps(
                {"page": n, "items": [{"number": 1000 - n * 30 - i, "title": f"bug {n}-{i}"} for i in range(5)]}
            ),
        )
        for n in range(1, 13)
    ]


def many_files():
    names = [
        "app",
        "config",
        "models",
        "routes",
        "utils",
        "db",
        "auth",
        "cache",
        "tasks",
        "cli",
        "errors",
        "schemas",
        "views",
        "forms",
        "middleware",
        "signals",
        "admin",
        "tests",
    ]
    return [("Read", {"file_path": f"/home/dev/repo/src/{n}.py"}, code(i)) for i, n in enumerate(names)]


def larger_limits():
    path = "/home/dev/repo/logs/server.log"
    return [
        ("Read", {"file_path": path, "limit": limit}, code(3, limit // 10)) for limit in (50, 100, 200, 400, 800)
    ] + [("Read", {"file_path": path}, code(3, 120))]


def polling_changing_output():
    return [
        ("check_background_tasks", {}, f"task build-7: running, {pct}% ({pct * 12} of 1200 modules)")
        for pct in range(0, 100, 4)
    ]


def shell_polling_changing_output():
    return [
        (
            "Bash",
            {"command": "sleep 30 && tail -n 3 /tmp/train.log"},
            f"epoch {e} step {e * 100} loss {2.5 - e * 0.07:.3f}\nepoch {e} step {e * 100 + 50} loss {2.4 - e * 0.07:.3f}",
        )
        for e in range(25)
    ]


def sleep_then_check():
    steps = []
    for e in range(15):
        steps.append(("Bash", {"command": "sleep 20"}, ""))
        steps.append(("Bash", {"command": "tail -n 2 /tmp/build.log"}, f"[{e * 7}/120] Compiling crate_{e}"))
    return steps


def job_status_polling():
    return [
        ("get_job_status", {"job_id": "job-8841"}, json.dumps({"state": "RUNNING", "progress": p / 20}))
        for p in range(20)
    ]


def date_like():
    return [("Bash", {"command": "date"}, f"Mon Mar  3 10:{m:02d}:{(m * 17) % 60:02d} UTC 2025") for m in range(12)]


def iso_date():
    return [
        ("Bash", {"command": "date -u +%Y-%m-%dT%H:%M:%SZ"}, f"2025-03-03T10:{m:02d}:{(m * 13) % 60:02d}Z")
        for m in range(12)
    ]


def clock_tool():
    return [("get_time", {}, json.dumps({"time": f"2025-03-03T10:{m:02d}:00Z"})) for m in range(12)]


def debugger_stepping():
    # The debugged program loops over lines 12-14, so `next` shows the same lines again and
    # again; the agent prints the loop variable now and then.
    steps = []
    for i in range(30):
        line = 12 + i % 3
        steps.append(("debugger", {"command": "next"}, f"> /app/main.py({line})<module>()\n-> line {line}"))
        if i % 3 == 2:
            steps.append(("debugger", {"command": "p total"}, str(i * (i + 1) // 2)))
    return steps


def debugger_step_print():
    steps = []
    for i in range(20):
        steps.append(("debugger", {"command": "step"}, f"> /app/parse.py({30 + i})parse_token()"))
        steps.append(("debugger", {"command": "p token"}, repr(f"tok{i}")))
    return steps


def writing_files():
    names = ["user", "order", "invoice", "product", "customer", "payment", "shipment", "review", "cart", "coupon"]
    return [
        (
            "Write",
            {
                "file_path": f"/home/dev/repo/src/models/{n}.py",
                "content": f"class {n.title()}(Base):\n    __tablename__ = '{n}s'\n" + code(i, 25),
            },
            f"File created successfully at: /home/dev/repo/src/models/{n}.py",
        )
        for i, n in enumerate(names)
    ]


def writing_templated_files():
    # Same template for every entity, and a write tool that only answers "OK".
    names = ["user", "order", "invoice", "product", "customer", "payment", "shipment", "review"]
    template = (
        "from fastapi import APIRouter\n\nrouter = APIRouter(prefix='/{n}s')\n\n"
        "@router.get('/')\ndef list_{n}s():\n    return db.query({N}).all()\n\n"
        "@router.get('/{{id}}')\ndef get_{n}(id: int):\n    return db.get({N}, id)\n"
    )
    return [
        ("write_file", {"path": f"src/routes/{n}.py", "content": template.format(n=n, N=n.title())}, "OK")
        for n in names
    ]


def moving_files():
    return [("Bash", {"command": f"git mv src/old/module_{i}.py src/pkg/module_{i}.py"}, "") for i in range(12)]


def edit_test_progress():
    steps = []
    failures = [4, 3, 3, 2, 1, 0]
    for i, failed in enumerate(failures):
        steps.append(
            (
                "Edit",
                {"file_path": "/repo/app/pricing.py", "old_string": f"rate = {i}", "new_string": f"rate = {i + 1}"},
                "The file /repo/app/pricing.py has been updated.",
            )
        )
        summary = f"{failed} failed, {20 - failed} passed in 1.{i}2s" if failed else "20 passed in 1.31s"
        body = "".join(f"FAILED tests/test_pricing.py::test_case_{k} - AssertionError\n" for k in range(failed))
        steps.append(
            (
                "Bash",
                {"command": "python -m pytest -q tests/test_pricing.py"},
                body + summary + ("\nexit code 1" if failed else ""),
            )
        )
    return steps


def parallel_reads():
    return [
        [
            ("Read", {"file_path": f"/repo/src/a{i}.py"}, code(i)),
            ("Read", {"file_path": f"/repo/src/b{i}.py"}, code(i + 50)),
        ]
        for i in range(8)
    ]


TRAPS = {
    "paginated reads (offset)": paginated_reads,
    "paginated search (page)": paginated_search,
    "reads of many different files": many_files,
    "re-reading a file with a larger limit": larger_limits,
    "polling a long job, output changing": polling_changing_output,
    "shell polling with sleep, output changing": shell_polling_changing_output,
    "sleep then check, output changing": sleep_then_check,
    "custom job-status tool, progress changing": job_status_polling,
    "date": date_like,
    "date printing ISO timestamps": iso_date,
    "clock tool returning only a timestamp": clock_tool,
    "debugger next through a loop": debugger_stepping,
    "debugger step and print": debugger_step_print,
    "writing many files": writing_files,
    "writing templated files, tool answers OK": writing_templated_files,
    "moving many files (no output)": moving_files,
    "edit/run-tests cycle making progress": edit_test_progress,
    "parallel reads of different files": parallel_reads,
}


@pytest.mark.parametrize("history", TRAPS.values(), ids=TRAPS.keys())
def test_trap_stays_quiet_after_every_step(history):
    steps = history()
    trace = trace_of(*steps)
    for k in range(1, len(trace.events) + 1):
        assert actions(prefix(trace, k)) == {}, f"acted after step {k}"


@pytest.mark.parametrize("history", TRAPS.values(), ids=TRAPS.keys())
def test_trap_stays_quiet_when_the_next_call_is_proposed(history):
    steps = [s for step in history() for s in (step if isinstance(step, list) else [step])]
    trace = trace_of(*steps)
    for k in range(1, len(trace.events)):
        tool, args, _ = steps[k]
        assert actions(propose(prefix(trace, k), tool, args)) == {}, f"acted on proposed step {k + 1}"
