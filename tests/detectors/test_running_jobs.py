"""A job that progresses is not a loop: a poll whose answer changed by itself during the run is
polling a running job, and the same answer again between two changes is at most a warning to
pace the polls. A poll that has answered the same since its first call keeps the ladder (a
busy-wait on a job that never moves is still ended), and so does a streak longer than the
no_progress window (a job that stopped moving)."""

from __future__ import annotations

import pytest
from runs import replayed, stopped_at

CLAUDE = dict(tools=["Bash", "Read", "Edit", "Write", "BashOutput"], system="You are Claude Code.")
QWEN = dict(tools=["run_shell_command", "read_file", "edit", "write_file", "grep_search", "tool_search"])


def tail(rows: int) -> tuple:
    return ("Bash", {"command": "tail -n 3 /tmp/ingest.log", "description": "check"}, f"processed {rows} rows")


def output(bash_id: str, lines: int) -> tuple:
    return ("BashOutput", {"bash_id": bash_id}, "<status>running</status>\n<stdout>\n" + "row\n" * lines + "</stdout>")


def qwen(rows: int) -> tuple:
    return (
        "run_shell_command",
        {"command": "cat progress.txt", "description": "check"},
        f"Command: cat progress.txt\nDirectory: (root)\nOutput: {rows} rows\nError: (none)\nExit Code: 0\n"
        "Signal: (none)\nProcess Group PGID: (none)",
    )


def growing(step, polls: int, streak: int) -> list:
    """``polls`` polls of a job whose output grows, then stays the same for ``streak`` polls,
    then grows again (the first answers differ: the job is seen moving from the start)."""
    out, rows = [], 0
    for k in range(polls):
        if k < 2 or k % (streak + 1) == 0:
            rows += 1000
        out.append(step(rows))
    return ["run the ingestion and watch it", *out]


JOBS = {
    "a shell tail of a log (Claude Code)": (lambda rows: tail(rows), CLAUDE),
    "BashOutput of a background shell": (lambda rows: output("bash_1", rows // 1000), CLAUDE),
    "a status file read through Qwen Code's shell": (qwen, QWEN),
}


@pytest.mark.parametrize("case", JOBS)
@pytest.mark.parametrize("streak", [4, 6, 12])
def test_a_job_whose_output_grows_between_streaks_is_never_stopped(case, streak):
    step, agent = JOBS[case]
    script = growing(step, 45, streak)
    assert stopped_at(script, **agent) is None
    assert "warn" in replayed(script, **agent)  # polled without waiting: told to pace its polls


@pytest.mark.parametrize("case", JOBS)
def test_a_busy_poll_that_never_moved_keeps_the_ladder(case):
    step, agent = JOBS[case]
    script = ["watch the job", *[step(0) for _ in range(200)]]
    assert stopped_at(script, **agent) <= 7  # within 3 polls of the 4th identical one


def test_a_job_that_stops_moving_for_longer_than_the_window_is_stopped():
    script = growing(tail, 5, 4) + [tail(7000)] * 40
    assert stopped_at(script, **CLAUDE) is not None


def test_a_change_the_agent_made_itself_is_no_job_moving():
    """A file re-read after the agent's own edit answered differently because of the edit; the
    re-reads after it that answer the same are the ladder's."""
    script = [
        "check the config",
        ("Read", {"file_path": "/w/app.cfg"}, "port = 1"),
        ("Edit", {"file_path": "/w/app.cfg", "old_string": "1", "new_string": "2"}, "The file has been updated."),
        *[("Read", {"file_path": "/w/app.cfg"}, "port = 2")] * 8,
    ]
    assert stopped_at(script, **CLAUDE) is not None


def test_a_stub_for_an_unchanged_reread_is_no_job_moving():
    """Qwen Code answers a second whole read of an unchanged file with a stub: nothing found,
    not another answer of a moving job."""
    stub = "[File /w/a.py unchanged since last read in this session. Refer to the content above.]"
    script = [
        "read a.py",
        ("read_file", {"file_path": "/w/a.py"}, "x = 1\n" * 20),
        *[("read_file", {"file_path": "/w/a.py"}, stub)] * 8,
    ]
    assert stopped_at(script, **QWEN) is not None
