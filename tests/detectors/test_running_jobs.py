"""A job that progresses is not a loop (the cases of tests/support/classes.py: jobs growing
between streaks are only told to pace their polls, busy polls that never moved keep the
ladder). What else makes a job's answers change, or not: a streak longer than the no_progress
window (a job that stopped moving), the agent's own edit, a stub for an unchanged re-read."""

from __future__ import annotations

import pytest
from runs import stopped_at
from support.classes import CLAUDE, QWEN, growing, tail


def test_a_job_that_stops_moving_for_longer_than_the_window_is_stopped():
    script = growing(tail, 5, 4) + [tail(7000)] * 40
    assert stopped_at(script, **CLAUDE.kwargs()) is not None


def test_a_change_the_agent_made_itself_is_no_job_moving():
    """A file re-read after the agent's own edit answered differently because of the edit; the
    re-reads after it that answer the same are the ladder's."""
    script = [
        "check the config",
        ("Read", {"file_path": "/w/app.cfg"}, "port = 1"),
        ("Edit", {"file_path": "/w/app.cfg", "old_string": "1", "new_string": "2"}, "The file has been updated."),
        *[("Read", {"file_path": "/w/app.cfg"}, "port = 2")] * 8,
    ]
    assert stopped_at(script, **CLAUDE.kwargs()) is not None


def test_a_stub_for_an_unchanged_reread_is_no_job_moving():
    """Qwen Code answers a second whole read of an unchanged file with a stub: nothing found,
    not another answer of a moving job."""
    stub = "[File /w/a.py unchanged since last read in this session. Refer to the content above.]"
    script = [
        "read a.py",
        ("read_file", {"file_path": "/w/a.py"}, "x = 1\n" * 20),
        *[("read_file", {"file_path": "/w/a.py"}, stub)] * 8,
    ]
    assert stopped_at(script, **QWEN.kwargs()) is not None
