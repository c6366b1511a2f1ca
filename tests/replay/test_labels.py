"""Labels files: CSV or JSON, a run named by its path or its session id, checked strictly (the
file and the entry named in every error), and written back in the same format."""

from __future__ import annotations

import json

import pytest

from gateway.replay.labels import Label, LabelError, Labels, read_labels, write_labels
from gateway.replay.run import Run, Segment


def run(name: str, ident: str, label: str | None = None) -> Run:
    return Run(name, ident, "requests", [Segment({"messages": []}, "chat")], label=label)


def test_csv_by_path_or_session_id(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text("run,label,loop_at,note\nprojects/a/s1.jsonl,loop,12,retries pytest\ns-2,Healthy,,\n")
    labels = read_labels(path)
    assert labels.of(run("projects/a/s1.jsonl", "s-1")) == Label("loop", 12, "retries pytest")
    assert labels.of(run("projects/b/s2.jsonl", "s-2")) == Label("healthy")
    assert labels.of(run("other.jsonl", "s-3")) is None
    assert labels.unused() == []


def test_json_list_object_or_mapping(tmp_path):
    as_list = [{"path": "a.jsonl", "label": "borderline"}, {"id": "s-9", "label": "loop", "loop_at": 0}]
    for document in (as_list, {"labels": as_list}, {"a.jsonl": "borderline", "s-9": {"label": "loop", "loop_at": 0}}):
        path = tmp_path / "labels.json"
        path.write_text(json.dumps(document))
        labels = read_labels(path)
        assert labels.of(run("a.jsonl", "x")) == Label("borderline")
        assert labels.of(run("b.jsonl", "s-9")) == Label("loop", 0)


def test_the_log_own_label_counts_unless_the_file_labels_the_run():
    labels = Labels({"a.jsonl:1": Label("healthy")})
    assert labels.of(run("a.jsonl:1", "r1", label="loop")) == Label("healthy")
    assert labels.of(run("a.jsonl:2", "r2", label="loop")) == Label("loop")
    assert labels.unused() == []


@pytest.mark.parametrize(
    "text, problem",
    [
        ("run,label\na.jsonl,stuck\n", "line 2: label must be one of loop, healthy, borderline, not 'stuck'"),
        ("run,label,loop_at\na.jsonl,loop,soon\n", "line 2: loop_at must be a tool-call index"),
        ("run,label,loop_at\na.jsonl,loop,-1\n", "line 2: loop_at must be 0 or more"),
        ("label\nloop\n", "line 2: no run"),
        ("run,label\na.jsonl,loop\na.jsonl,healthy\n", "line 3: 'a.jsonl' is labelled twice"),
        ('{"a.jsonl": 3}', "'a.jsonl': label must be one of"),
        ("[1]", "labels[0]: expected an object"),
        ("[oops", "invalid JSON"),
    ],
)
def test_errors_name_the_file_and_the_entry(tmp_path, text, problem):
    path = tmp_path / ("labels.json" if text[:1] in "[{" else "labels.csv")
    path.write_text(text)
    with pytest.raises(LabelError) as caught:
        read_labels(path)
    assert str(caught.value).startswith(f"{path}: ") and problem in str(caught.value)


def test_written_labels_read_back(tmp_path):
    rows = [
        {"run": "s-1", "label": "loop", "loop_at": 4, "note": "console: prompt 1"},
        {"run": "s-2", "label": "healthy"},
    ]
    for fmt in ("csv", "json"):
        path = tmp_path / f"labels.{fmt}"
        path.write_text(write_labels(rows, fmt))
        labels = read_labels(path)
        assert labels.by_key == {"s-1": Label("loop", 4, "console: prompt 1"), "s-2": Label("healthy")}
