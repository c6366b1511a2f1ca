"""The development corpus (``../shared/corpus``: 238 real agent runs, labelled), replayed and
scored with its own labels as the operator's labels would be: every run read, each with its
label and agent, scores per label and per agent, and the corpus's rule held: no healthy run is
stopped by the shipped default policy. Skipped where the corpus is not beside the repository
(``LOOPGUARD_CORPUS`` names another copy)."""

from __future__ import annotations

import io
import json
import lzma
import os
from collections import Counter
from pathlib import Path

import pytest
from support.process import ROOT

from gateway.replay.command import run_replay

CORPUS = Path(os.environ.get("LOOPGUARD_CORPUS") or ROOT.parent / "shared" / "corpus" / "runs.jsonl.xz")
pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason=f"the development corpus is not at {CORPUS}")


@pytest.fixture(scope="module")
def corpus() -> list[dict]:
    with lzma.open(CORPUS, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def scored(tmp_path: Path, *extra: str, **options) -> dict:
    report = tmp_path / "corpus.json"
    err = io.StringIO()
    assert (
        run_replay(
            [str(CORPUS), *extra], "default", json_out=str(report), quiet=True, out=io.StringIO(), err=err, **options
        )
        == 0
    )
    return json.loads(report.read_text())


def test_every_run_is_read_with_its_label_and_agent(tmp_path, corpus):
    document = scored(tmp_path)
    assert document["errors"] == []
    runs = document["runs"]
    assert [(r["id"], r["label"], r["agent"]) for r in runs] == [(c["id"], c["label"], c["agent"]) for c in corpus]
    scores = document["scores"]
    assert {label: g["runs"] for label, g in scores["labels"].items()} == dict(Counter(c["label"] for c in corpus))
    per_agent = {(a, label): g["runs"] for a, labels in scores["agents"].items() for label, g in labels.items()}
    assert per_agent == dict(Counter((c["agent"], c["label"]) for c in corpus))
    for label, group in scores["labels"].items():
        mine = [r for r in runs if r["label"] == label]
        assert group["warned"] == sum(r["first_warn"] is not None for r in mine)
        assert group["stopped"] == sum(r["first_stop"] is not None for r in mine)
    # The corpus's rule for the detectors: no healthy run stopped.
    assert scores["labels"]["healthy"]["stopped"] == 0, scores["healthy_disturbed"]


def test_a_labels_file_overrides_the_corpus_labels(tmp_path, corpus):
    loop = next(c for c in corpus if c["label"] == "loop")
    labels = tmp_path / "labels.csv"
    labels.write_text(f"run,label,loop_at\n{loop['id']},loop,0\n")
    document = scored(tmp_path, labels=str(labels))
    (run,) = [r for r in document["runs"] if r["id"] == loop["id"]]
    assert run["loop_at"] == 0
    late = document["scores"]["labels"]["loop"]["warn_after_loop_at"]
    if run["first_warn"] is not None:  # timed from the labelled start of the loop
        assert late == {
            "runs": 1,
            "median": run["first_warn"],
            "min": run["first_warn"],
            "max": run["first_warn"],
            "early": 0,
        }
