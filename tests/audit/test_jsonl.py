"""The JSON-lines sink, configured like an operator does, fed by a real looping conversation."""

from __future__ import annotations

import json

from support.agent import Agent
from support.guarded import guarded
from support.guarded import sample_event as event
from support.looping import stubborn

from gateway.audit.jsonl_sink import JsonlSink


def test_every_event_is_one_json_line(tmp_path):
    path = tmp_path / "audit" / "events.jsonl"
    with guarded(stubborn(), tmp_path, audit={"jsonl_path": str(path)}) as gw:
        Agent(gw.client, tools={"read_file": lambda a: "same"}).run("go")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    lines = [e for e in records if e["event"] == "loop_intervention"]
    assert [e["action"] for e in lines] == ["warn", "reject", "terminate"]
    assert lines[0]["steps"] == [1, 2, 3] and lines[0]["tool"] == "read_file"
    # Each stop is followed by what it saved (estimated off the request path, drained at shutdown).
    savings = [e for e in records if e["event"] == "loop_savings"]
    assert sorted((e["action"], e["request_id"]) for e in savings) == [
        (e["action"], e["request_id"]) for e in lines[1:]
    ]
    assert all(e["tokens"] > 0 and e["detector"] == "no_progress" for e in savings)


def test_appends_across_restarts(tmp_path):
    path = tmp_path / "events.jsonl"
    for _ in range(2):
        sink = JsonlSink(path)
        sink.start()
        sink.emit(event())
        sink.stop()
    assert len(path.read_text().splitlines()) == 2


def test_opens_lazily_without_a_lifespan(tmp_path):
    sink = JsonlSink(tmp_path / "late.jsonl")
    sink.emit(event())
    sink.stop()
    assert json.loads((tmp_path / "late.jsonl").read_text())["detector"] == "exact_repeat"
