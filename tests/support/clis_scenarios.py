"""The loops and their healthy look-alikes every coding-agent CLI is judged on, as steps any CLI
spells with its own tools (``support.clis_record.Step``).

Each CLI's real traffic for these runs is recorded once per version (``record.py --scenarios``)
and replayed through a real gateway by tests/agents/test_recorded_scenarios.py: a loop must be
warned and stopped within ``MAX_EXECUTED`` of its calls, a healthy run must never see the
gateway. A loop is recorded without the gateway, so it goes on to its last step; where a real
model changes course once warned (another program on the same missing file), the script changes
course after its third call, as a warned model would.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from support.cli_runs import CALC, FAILING_TEST, LONG, NOTES
from support.clis_record import Step, edit, read, shell

LOOP_CALLS = 12  # a loop's recorded length: it must be stopped well before its end


@dataclass(frozen=True)
class Scenario:
    """``setup``: leading steps that are no part of the loop (the read an editor needs first)."""

    name: str
    steps: tuple[Step, ...]
    files: dict[str, str]
    loop: bool
    setup: int = 0


def _loop(name: str, steps: list[Step], files: dict[str, str], setup: int = 0) -> Scenario:
    return Scenario(name, tuple(steps[: LOOP_CALLS + setup]), files, True, setup)


def _healthy(name: str, steps: list[Step], files: dict[str, str]) -> Scenario:
    return Scenario(name, tuple(steps), files, False)


TEST_RUNS = [
    "python -m pytest tests -q",
    "pytest tests/",
    "python3 -m pytest -x tests",
    "pytest tests",
    "python -m pytest tests",
    "pytest -q tests",
    "python -m pytest tests/test_total.py",
    "python3 -m pytest tests -q",
    "pytest tests -x",
    "python -m pytest ./tests",
    "pytest ./tests -q",
    "python3 -m pytest tests/ -x",
]
STATUS_POLLS = [
    "cat status.txt",
    "tail -1 status.txt",
    "tail -n 1 ./status.txt",
    "head status.txt",
    "head -n 1 status.txt",
    "tail -n1 status.txt",
    "cat ./status.txt",
    "head -1 ./status.txt",
    "tail status.txt",
    "sed -n 1p status.txt",
    "head -n1 status.txt",
    "awk 'NR==1' status.txt",
]
OTHER_PROGRAMS = ["tail x.txt", "sed -n 1p x.txt", "nl x.txt", "awk 'NR==1' x.txt", "sort x.txt", "head x.txt"]
OTHER_PROGRAMS += ["grep foo x.txt", "wc -l x.txt", "cut -c1-5 x.txt"]
# Old texts unlike anything in the file, so no editor's fuzzy match applies one (Gemini CLI's
# matcher ignores spacing: "return a-b" would match "return a - b").
REFUSED_OLDS = [f"    return functools.reduce(operator.add, values, {n})  # sum{'!' * (n % 3)}" for n in range(12)]
JOB = (
    "from pathlib import Path\n\ncounter = Path('job.count')\n"
    "n = int(counter.read_text()) + 1 if counter.exists() else 1\ncounter.write_text(str(n))\n"
    "print(f'job step {n}/8 ' + ('done' if n >= 8 else 'running'))\n"
)


def _done(work: Path) -> None:
    (work / "status.txt").write_text("done\n")


CHECK = (
    "from calc import add\n\nresult = add(2, 3)\n"
    "print('ok' if result == 5 else f'FAIL: add(2, 3) returned {result}, expected 5')\n"
    "raise SystemExit(0 if result == 5 else 1)\n"
)


def _edits_and_runs() -> list[Step]:
    """Read, run the check, then edit and run again until it passes: its output changes each time."""
    run = shell("python3 check.py")
    bodies = ["a - b", "a * b", "b - a", "a + b"]
    steps = [read("calc.py", "cat calc.py"), run]
    for old, new in itertools.pairwise(bodies):
        steps += [edit("calc.py", f"return {old}", f"return {new}"), run]
    return steps


SCENARIOS = [
    _loop(
        "failing_test_spelled_many_ways",
        [shell(c) for c in TEST_RUNS],
        {"calc.py": CALC, "tests/test_total.py": FAILING_TEST},
    ),
    _loop(
        "read_tool_past_the_end",
        [read("notes.txt", f"sed -n '{100 + 20 * n},{119 + 20 * n}p' notes.txt", 100 + 20 * n, 20) for n in range(12)],
        {"notes.txt": NOTES},
    ),
    _loop(
        "sed_past_the_end",
        [shell(f"sed -n '{100 + 20 * n},{119 + 20 * n}p' notes.txt") for n in range(12)],
        {"notes.txt": NOTES},
    ),
    _loop(
        "refused_edit_retried",  # read first: an editor may refuse a file not read yet
        [read("calc.py", "cat calc.py"), *(edit("calc.py", old, "return a + b") for old in REFUSED_OLDS)],
        {"calc.py": CALC},
        setup=1,
    ),
    _loop("poll_spelled_many_ways", [shell(c) for c in STATUS_POLLS], {"status.txt": "running\n"}),
    _loop(
        "missing_file_other_programs",
        [shell("cat x.txt")] * 3 + [shell(c) for c in OTHER_PROGRAMS],
        {"readme.txt": "x.txt is missing\n"},
    ),
    _loop("same_call", [shell("cat status.txt")] * 12, {"status.txt": "running\n"}),
    _loop("same_read", [read("status.txt", "cat status.txt")] * 12, {"status.txt": "running\n"}),
    _healthy(
        "thirty_files_read",
        [read(f"f{n:02d}.txt", f"cat f{n:02d}.txt") for n in range(1, 31)],
        {f"f{n:02d}.txt": f"file {n} says {n * n}\n" for n in range(1, 31)},
    ),
    _healthy("edit_run_test_passes", _edits_and_runs(), {"calc.py": CALC, "check.py": CHECK}),
    _healthy(
        "paced_poll_done_at_6",
        [shell("sleep 1 && cat status.txt")] * 5 + [shell("sleep 1 && cat status.txt", before=_done)],
        {"status.txt": "running\n"},
    ),
    _healthy("moving_poll_done_at_8", [shell("python3 job.py")] * 8, {"job.py": JOB}),
    _healthy(
        "sweep_twelve_files",
        [shell(f"wc -l f{n}.txt") for n in range(1, 13)],
        {f"f{n}.txt": "x\n" * n for n in range(1, 13)},
    ),
    _healthy(
        "scroll_with_the_read_tool",
        [read("long.txt", f"sed -n '{1 + 20 * n},{20 + 20 * n}p' long.txt", 1 + 20 * n, 20) for n in range(10)],
        {"long.txt": LONG},
    ),
    _healthy(
        "scroll_with_sed",
        [shell(f"sed -n '{1 + 20 * n},{20 + 20 * n}p' long.txt") for n in range(10)],
        {"long.txt": LONG},
    ),
]
