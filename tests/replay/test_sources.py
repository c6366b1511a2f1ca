"""What the operator types (files, folders, globs) becomes the logs to read, each named by its
path under the argument it was found under."""

from __future__ import annotations

from support.sessions import SESSIONS

from gateway.replay.sources import find


def test_a_folder_is_walked_for_logs_and_names_them_under_it():
    found = find([str(SESSIONS / "codex")])
    assert len(found.sources) == 2 and not found.missing
    assert all(s.rel.startswith("sessions/2026/12/05/rollout-") and not s.explicit for s in found.sources)


def test_a_file_is_named_by_its_name_and_is_explicit(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text("{}\n")
    (source,) = find([str(path)]).sources
    assert source.rel == "a.jsonl" and source.explicit


def test_globs_home_and_missing_arguments(tmp_path, monkeypatch):
    for name in ("x1.jsonl", "x2.jsonl", "y.txt"):
        (tmp_path / "logs" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "logs" / name).write_text("{}\n")
    monkeypatch.setenv("HOME", str(tmp_path))
    found = find(["~/logs/x*.jsonl", "~/logs/x1.jsonl", str(tmp_path / "nothing"), "~/none-*.jsonl"])
    assert [s.rel for s in found.sources] == ["x1.jsonl", "x2.jsonl"]  # each file once
    assert found.missing == [str(tmp_path / "nothing"), "~/none-*.jsonl"]


def test_compressed_logs_are_found(tmp_path):
    (tmp_path / "runs.jsonl.xz").write_bytes(b"")
    (tmp_path / "notes.txt").write_text("")
    assert [s.rel for s in find([str(tmp_path)]).sources] == ["runs.jsonl.xz"]
