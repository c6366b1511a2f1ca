"""Aider through the gateway against a scripted model (streamed): the smoke set, one loop and one
healthy run.

Aider acts in text: SEARCH/REPLACE blocks in the reply, applied by Aider itself. An edit whose
SEARCH text is not in the file is answered with Aider's own "SearchReplaceNoExactMatch" message;
Aider retries three times per user message, and a user who keeps saying "try again" keeps the
refused edit going. The gateway reads the blocks as edits and the refusal as their result, so the
model is warned at the third refused attempt of each user message. Beside it, twelve different
edits that apply run in full, and no LoopGuard text ever reaches the model.
"""

from __future__ import annotations

import json

import pytest
from support.cli_runs import default_policy, read_audit
from support.clis_aider import aider_cli, numbered_edits, refused_edit, run_aider
from support.guarded import guarded

pytestmark = pytest.mark.skipif(aider_cli() is None, reason="Aider is not installed")

FINAL = "FINAL ANSWER: hello.py has no line print('goodbye'), so the edit cannot apply; I stopped."


def audit_events(path) -> list[tuple[str, str]]:
    """(action, detector) of each intervention the gateway made, in order."""
    return [(e["action"], e["detector"]) for e in read_audit(path)]


def test_a_refused_edit_retried_again_and_again_is_ended_with_the_models_answer(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "hello.py").write_text("print('hello')\n")
    audit = tmp_path / "audit.jsonl"
    messages = ["Change the greeting in hello.py from goodbye to hi."] + ["try again"] * 4
    with guarded(
        refused_edit("hello.py", "print('goodbye')", "print('hi')", FINAL),
        tmp_path,
        default_policy(),
        audit={"jsonl_path": str(audit)},
    ) as gw:
        run = run_aider(gw.url, work, tmp_path, messages, ["hello.py"], stream=True)
        requests = list(gw.upstream.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    # Aider stops a refused edit itself after 3 retries per user message, and each "try again"
    # is the user's own: the gateway reads the SEARCH/REPLACE blocks as edits and Aider's
    # refusal as their result, and warns the model at the third refused attempt of every one.
    events = audit_events(audit)
    assert events and all(e == ("warn", "error_repeat") for e in events), events
    assert len(events) == len(messages), events
    warned = [r for r in requests if "[LoopGuard]" in json.dumps(r["json"])]
    assert warned, "no warning reached the model"
    assert (work / "hello.py").read_text() == "print('hello')\n"


def test_twelve_different_edits_apply_in_full(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    (work / "values.py").write_text("".join(f"v{i} = 0\n" for i in range(1, 13)))
    audit = tmp_path / "audit.jsonl"
    messages = [f"In values.py please set v{i} to {i}." for i in range(1, 13)]
    with guarded(numbered_edits("values.py"), tmp_path, default_policy(), audit={"jsonl_path": str(audit)}) as gw:
        run = run_aider(gw.url, work, tmp_path, messages, ["values.py"], stream=True)
        requests = list(gw.upstream.requests)
    assert run.returncode == 0, run.stderr[-2000:]
    assert (work / "values.py").read_text() == "".join(f"v{i} = {i}\n" for i in range(1, 13))
    assert run.refusals == 0
    assert not any("[LoopGuard" in json.dumps(r["json"]) for r in requests if r["json"]), audit_events(audit)
