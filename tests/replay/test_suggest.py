"""The runs most worth labelling, by the strongest loop-like sign each shows: identical calls in
a row, failing calls in a row, a short cycle; labelled runs last."""

from __future__ import annotations

from support.sessions import ClaudeLog

from gateway.policy.loader import load_policy_text
from gateway.replay.logs import Source, read_source
from gateway.replay.runner import replay
from gateway.replay.suggest import excerpt, sign, suggest

QUIET = load_policy_text("version: 1\nname: quiet\nmax_action: warn\n")


def replayed(tmp_path, name, calls, label=None):
    log = ClaudeLog(name)
    log.user("go")
    for tool, arguments, result, error in calls:
        log.call(tool, arguments, result, error=error)
    path = log.write(tmp_path / f"{name}.jsonl")
    (run,) = read_source(Source(path, path.name))
    run.label = label
    return replay(run, QUIET)


def bash(command, result="ok", error=False):
    return ("Bash", {"command": command}, result, error)


def test_each_sign_and_where_it_starts(tmp_path):
    streak = replayed(tmp_path, "streak", [bash("ls"), *[bash("make")] * 5, bash("ls -a")])
    assert (sign(streak).strength, sign(streak).start, sign(streak).why) == (5, 1, "identical calls in a row")
    failing = replayed(
        tmp_path, "failing", [bash(f"pip install m{n}", "error: no such module", True) for n in range(4)]
    )
    assert (sign(failing).strength, sign(failing).why) == (4, "failing calls in a row")
    cycle = replayed(tmp_path, "cycle", [bash("edit"), bash("test", "1 failed")] * 4)
    assert (sign(cycle).strength, sign(cycle).start, sign(cycle).why) == (8, 0, "calls in a 2-call cycle")
    calm = replayed(tmp_path, "calm", [bash(f"cat f{n}") for n in range(6)])
    assert sign(calm).strength == 0  # nothing repeats: no sign


def test_unlabelled_strong_signs_first_and_one_screen_each(tmp_path):
    long_loop = replayed(tmp_path, "long", [bash("make")] * 30)
    labelled = replayed(tmp_path, "known", [bash("make")] * 40, label="loop")
    short = replayed(tmp_path, "short", [bash("make")] * 4)
    picked = suggest([short, labelled, long_loop], 3)
    assert [r.name for r, _ in picked] == ["long.jsonl", "short.jsonl", "known.jsonl"]
    text = excerpt(*picked[0])
    lines = text.splitlines()
    assert lines[0].startswith("long.jsonl  (id long, claude_code, 30 calls)")
    assert "30 identical calls in a row from #0" in lines[1] and "policy: first action at #" in lines[1]
    assert lines[-1] == "    ... 16 more calls" and len(lines) == 17
