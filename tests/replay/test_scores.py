"""Scores against labels, through the command as an operator runs it: per label and per agent,
runs warned and stopped, how many calls after ``loop_at`` the first action and the first stop
came, what the stops saved, and the healthy runs the policy would have disturbed, first."""

from __future__ import annotations

import io
import json

import pytest
from support.policies import ladder_policy
from support.sessions import ClaudeLog

from gateway.replay.command import run_replay

MISSING = "cat: x.txt: No such file or directory"
RUN_KEYS = ["path", "id", "format", "agent", "calls", "label", "loop_at", "first_warn", "first_stop", "actions"]


@pytest.fixture
def replayed(tmp_path):
    """Three Claude Code sessions under the no_progress ladder (warn 3, reject 4, terminate 5)."""
    logs = tmp_path / "projects"
    loop = ClaudeLog("loop-1")
    loop.user("what is in x.txt?")
    loop.call("Read", {"file_path": "/w/notes.md"}, "notes")
    for _ in range(9):
        loop.call("Bash", {"command": "cat x.txt", "description": "Show x"}, MISSING, error=True)
    loop.write(logs / "w" / "loop-1.jsonl")
    healthy = ClaudeLog("healthy-1")
    healthy.user("review the files")
    for n in range(8):
        healthy.call("Read", {"file_path": f"/w/f{n}.py"}, f"file {n}")
    healthy.write(logs / "w" / "healthy-1.jsonl")
    poll = ClaudeLog("poll-1")
    poll.user("wait for the job")
    for status in ("running", "running", "running", "running", "done"):
        poll.call("Bash", {"command": "cat status.txt", "description": "Check"}, status)
    poll.write(logs / "w" / "poll-1.jsonl")
    labels = tmp_path / "labels.csv"
    labels.write_text("run,label,loop_at\nw/loop-1.jsonl,loop,1\nhealthy-1,healthy,\nw/poll-1.jsonl,healthy,\n")
    policy = tmp_path / "ladder.yaml"
    policy.write_text(ladder_policy())
    out, err, report = io.StringIO(), io.StringIO(), tmp_path / "replay.json"
    code = run_replay([str(logs)], str(policy), labels=str(labels), json_out=str(report), out=out, err=err)
    assert code == 0, err.getvalue()
    return json.loads(report.read_text()), out.getvalue()


def test_every_run_in_the_json(replayed):
    document, _ = replayed
    assert list(document) == ["runs", "errors", "scores"] and document["errors"] == []
    runs = {r["id"]: r for r in document["runs"]}
    assert all(list(r) == RUN_KEYS for r in runs.values())
    loop = runs["loop-1"]
    assert (loop["path"], loop["format"], loop["agent"], loop["calls"]) == (
        "w/loop-1.jsonl",
        "claude_code",
        "claude_code",
        10,
    )
    assert (loop["label"], loop["loop_at"], loop["first_warn"], loop["first_stop"]) == ("loop", 1, 3, 4)
    assert {"call": 3, "action": "warn", "detector": "no_progress", "phase": "request", "count": 3} in loop["actions"]
    assert runs["healthy-1"]["first_warn"] is None and runs["healthy-1"]["actions"] == []
    assert runs["poll-1"]["first_warn"] == 2  # the third identical look


def test_scores_per_label_and_agent(replayed):
    document, _ = replayed
    scores = document["scores"]
    loop, healthy = scores["labels"]["loop"], scores["labels"]["healthy"]
    assert (loop["runs"], loop["warned"], loop["stopped"]) == (1, 1, 1)
    assert loop["warn_after_loop_at"] == {"runs": 1, "median": 2, "min": 2, "max": 2, "early": 0}
    assert loop["stop_after_loop_at"]["median"] == 3
    assert loop["tokens_saved"] > 0  # what followed the stop
    # The look-alike poll is refused at its fourth look: the work a stop there would have cut.
    assert (healthy["runs"], healthy["warned"], healthy["stopped"]) == (2, 1, 1) and healthy["tokens_saved"] > 0
    assert scores["agents"]["claude_code"]["loop"]["warned"] == 1
    assert scores["policy"] == "test-ladder"


def test_the_healthy_runs_disturbed_come_with_the_calls_around(replayed):
    document, text = replayed
    (disturbed,) = document["scores"]["healthy_disturbed"]
    assert (disturbed["path"], disturbed["action"], disturbed["detector"], disturbed["call"]) == (
        "w/poll-1.jsonl",
        "warn",
        "no_progress",
        2,
    )
    assert disturbed["stopped_at"] == 3
    assert [c.split()[0] for c in disturbed["calls"]] == ["#0", "#1", "#2", "#3"]
    assert "[warn: no_progress]" in disturbed["calls"][2]
    # The terminal says the same, after the scores per label.
    assert text.index("scores of test-ladder") < text.index("healthy runs the policy would have disturbed: 1")
    assert "w/poll-1.jsonl (claude_code): warn by no_progress at #2, stopped at #3" in text
