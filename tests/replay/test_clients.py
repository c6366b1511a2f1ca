"""The logs the pinned clients wrote (a looping and a healthy session each), scored with their
labels (tests/fixtures/sessions/labels.csv), and a Claude Code loop the user compacted and resumed:
every loop warned and stopped a few calls in, every healthy run left alone, each client read
through its own profile."""

from __future__ import annotations

import io
import json

from support.sessions import SESSIONS

from gateway.replay.command import run_replay


def test_each_clients_loop_is_stopped_and_its_healthy_run_left_alone(tmp_path):
    report = tmp_path / "replay.json"
    labels = SESSIONS / "labels.csv"
    err = io.StringIO()
    assert run_replay([str(SESSIONS)], labels=str(labels), json_out=str(report), out=io.StringIO(), err=err) == 0
    assert "names no replayed run" not in err.getvalue()  # every label found its run
    document = json.loads(report.read_text())
    assert document["errors"] == []
    runs = document["runs"]
    assert {(r["format"], r["label"]) for r in runs} == {
        (client, label) for client in ("claude_code", "codex", "gemini_cli", "cline") for label in ("loop", "healthy")
    }
    assert {r["agent"] for r in runs} == {"claude_code", "codex", "gemini_cli", "cline"}
    for run in runs:
        if run["label"] == "loop":
            assert run["first_warn"] is not None and run["first_warn"] <= 4, run
            assert run["first_stop"] is not None and run["first_stop"] <= 8, run
        else:
            assert run["first_warn"] is None and run["actions"] == [], run
    scores = document["scores"]
    loops = sum(r["label"] == "loop" for r in runs)
    assert scores["labels"]["loop"]["stopped"] == loops == 5 and scores["labels"]["loop"]["tokens_saved"] > 0
    assert scores["healthy_disturbed"] == []
