"""``loopguard replay`` over folders of logs: a file it cannot read is named with the reason and
the rest go on, two policies side by side, the runs worth labelling, a progress bar on a
terminal."""

from __future__ import annotations

import io
import json

from support.policies import ladder_policy
from support.sessions import SESSIONS, ClaudeLog

from gateway.replay.command import run_replay


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def replay(*args: str, **options):
    out, err = io.StringIO(), io.StringIO()
    code = run_replay(list(args), out=out, err=err, **options)
    return code, out.getvalue(), err.getvalue()


def looping_log(path, calls=8):
    log = ClaudeLog(path.stem)
    log.user("what is in x.txt?")
    for _ in range(calls):
        log.call("Bash", {"command": "cat x.txt"}, "cat: x.txt: No such file", error=True)
    return log.write(path)


def test_an_unreadable_file_is_named_and_the_rest_go_on(tmp_path):
    looping_log(tmp_path / "logs" / "ok.jsonl")
    (tmp_path / "logs" / "settings.json").write_text('{"theme": "dark"}')  # a client's own file: skipped
    broken = tmp_path / "logs" / "rollout-cut.jsonl"  # a rollout cut before its first item
    broken.write_text('{"timestamp": "t", "type": "session_meta", "payload": {"id": "s"}}\n{"timestamp": "t", "ty')
    named = tmp_path / "notes.json"
    named.write_text("[1, 2]")
    report = tmp_path / "r.json"
    code, _, err = replay(str(tmp_path / "logs"), str(named), str(tmp_path / "absent"), json_out=str(report))
    assert code == 0
    document = json.loads(report.read_text())
    assert [r["path"] for r in document["runs"]] == ["ok.jsonl"]
    reasons = {e["path"]: e["reason"] for e in document["errors"]}
    assert reasons == {str(broken): "no response items in it", str(named): "not a session log of a format replay reads"}
    assert f"loopguard: skipped {named}: not a session log" in err
    assert f"{tmp_path / 'absent'}: no such file or folder" in err
    assert "1 files in those folders are no session log replay reads" in err


def test_nothing_to_read_is_an_error(tmp_path):
    assert replay(str(tmp_path / "absent"))[0] == 1
    assert replay(str(SESSIONS), fmt="yaml")[0] == 2


def test_two_policies_side_by_side(tmp_path):
    looping_log(tmp_path / "a.jsonl")
    policy = tmp_path / "ladder.yaml"
    policy.write_text(ladder_policy())
    report = tmp_path / "r.json"
    code, out, _ = replay(str(tmp_path / "a.jsonl"), policy_ref=str(policy), compare="warn-only", json_out=str(report))
    assert code == 0
    header, _, row = out.splitlines()[:3]
    assert header.split() == ["run", "label", "test-ladder", "warn/stop", "warn-only", "warn/stop"]
    assert row.split()[:2] == ["a.jsonl", "unlabelled"] and row.split()[-1] == "*"
    first, second = row.split()[2:4]
    assert first.split("/")[1] != "-" and second.endswith("/-")  # warn-only never stops a run
    compare = json.loads(report.read_text())["scores"]["compare"]
    assert compare["policy"] == "warn-only" and compare["runs"][0]["first_stop"] is None
    assert "1 of 1 runs differ" in out


def test_the_runs_worth_labelling_come_with_an_excerpt(tmp_path):
    looping_log(tmp_path / "loop.jsonl", calls=7)
    calm = ClaudeLog("calm")
    calm.user("review")
    for n in range(5):
        calm.call("Read", {"file_path": f"/w/{n}.py"}, "code")
    calm.write(tmp_path / "calm.jsonl")
    code, out, _ = replay(str(tmp_path), suggest=1)
    assert code == 0
    part = out.split("the 1 runs most worth labelling:")[1]
    assert part.lstrip().startswith("loop.jsonl  (id loop, claude_code, 7 calls)")
    assert "7 identical calls in a row from #0" in part and "calm.jsonl" not in part
    assert len(part.strip().splitlines()) <= 24  # one screen


def test_a_progress_bar_on_a_terminal(tmp_path):
    for n in range(3):
        looping_log(tmp_path / f"s{n}.jsonl", calls=3)
    err = Terminal()
    assert run_replay([str(tmp_path)], out=io.StringIO(), err=err) == 0
    assert "replaying" in err.getvalue() and "0/3" in err.getvalue()  # files, counted as they are read
