"""Claude Code sessions read as the Anthropic Messages requests the CLI sent: the logs the pinned
CLI wrote (parallel tool uses, a sub-agent's own file, the recorded tools and system prompt), and
the shapes of other versions (compaction, a rewound prompt, side chains in the session file, no
recorded tools)."""

from __future__ import annotations

import json

from support.sessions import ClaudeLog, calls_of, read, session_log, wire_calls

from gateway.detectors import REGISTRY
from gateway.policy.loader import load_policy_text, load_shipped_policy
from gateway.replay.logs import Source, read_source
from gateway.replay.runner import replay


def test_the_cli_log_is_the_requests_it_sent_with_parallel_uses_as_one_message():
    path = session_log("claude_code", "healthy")
    (run,) = read(path)
    assert run.format == "claude_code" and run.protocol == "anthropic" and run.profile == "claude_code"
    assert run.id == run.session == path.stem  # the session id the records carry is the file's name
    (segment,) = run.segments
    assert calls_of(segment) == wire_calls(path)
    replies = [m for m in segment.messages if m["role"] == "assistant"]
    assert [len([b for b in m["content"] if b["type"] == "tool_use"]) for m in replies[:3]] == [1, 2, 1]
    # The two results of the parallel round are one user message, in the order of the calls.
    after = segment.messages[segment.messages.index(replies[1]) + 1]
    assert [b["type"] for b in after["content"]] == ["tool_result", "tool_result"]
    assert {t["name"] for t in segment.body["tools"]} >= {"Bash", "Read", "Edit", "Agent"}
    assert "Claude Agent SDK" in json.dumps(segment.body["system"])


def test_a_sub_agent_is_a_run_of_its_own():
    parent = session_log("claude_code", "healthy")
    (agent_file,) = (parent.parent / parent.stem / "subagents").glob("agent-*.jsonl")
    (run,) = read(agent_file)
    assert run.id == agent_file.stem.removeprefix("agent-") and run.session == run.id
    assert calls_of(run.segments[0]) == [["Bash", {"command": "ls | wc -l", "description": "Count files"}, "3"]]
    assert run.segments[0].messages[0]["content"][0]["text"] == "SUBTASK: count files"


def test_the_looping_session_is_replayed_as_claude_code_sent_it():
    (run,) = read(session_log("claude_code", "loop"))
    result = replay(run, load_shipped_policy("default"))
    assert len(result.rows) == 20 and result.profile == "claude_code"  # recognised by its tools
    assert result.first_warn is not None and result.first_stop is not None


def test_the_cli_compaction_is_a_second_conversation_of_the_session():
    """The CLI compacted the session (``/compact``) and was resumed: two conversations, the
    second opening with the summary, judged as one session."""
    path = session_log("claude_code", "compacted-loop")
    (run,) = read(path)
    first, second = run.segments
    assert calls_of(second) == wire_calls(path)  # the requests after the compaction
    assert "continued from a previous conversation" in json.dumps(second.messages[0])
    assert len(calls_of(first)) == len(calls_of(second)) == 6
    result = replay(run, load_shipped_policy("default"))
    assert result.first_stop is not None and result.first_stop < 6  # the loop is stopped before it
    assert result.cut < run.base(1)  # nothing of the resumed conversation would have happened


def test_a_compaction_starts_a_segment_of_the_same_session(tmp_path):
    log = ClaudeLog()
    log.user("summarize a.txt")
    for _ in range(4):
        log.call("Read", {"file_path": "/w/a.txt"}, "contents of a.txt")
    log.compact("This session is being continued from a previous conversation. a.txt was read.")
    for _ in range(3):
        log.call("Read", {"file_path": "/w/a.txt"}, "contents of a.txt")
    (run,) = read(log.write(tmp_path / "s.jsonl"))
    assert [len(s.messages) for s in run.segments] == [9, 7]
    assert "continued from a previous" in run.segments[1].messages[0]["content"][0]["text"]
    only = "version: 1\nname: only-compaction\ndetectors:\n" + "".join(
        f"  {name}: false\n" for name in REGISTRY if name != "post_compaction"
    )
    result = replay(run, load_policy_text(only))
    # Judged as one session: the loop carried across the compaction is seen after it.
    assert any(m.detector == "post_compaction" for row in result.rows for m in row.marks), result.first


def test_a_rewound_prompt_leaves_its_abandoned_branch_out(tmp_path):
    log = ClaudeLog()
    log.user("fix the test")
    log.call("Bash", {"command": "pytest"}, "1 failed")
    branch_point = log.last
    log.call("Bash", {"command": "rm -rf build"}, "")  # the user rewound past this one
    log.last = branch_point
    log.user("try again, carefully")
    log.call("Bash", {"command": "pytest -x"}, "1 failed")
    (run,) = read(log.write(tmp_path / "s.jsonl"))
    assert [c[1]["command"] for c in calls_of(run.segments[0])] == ["pytest", "pytest -x"]


def test_side_chains_in_the_session_file_are_runs_of_their_own(tmp_path):
    main, side = ClaudeLog(), ClaudeLog(sidechain=True)
    main.user("review the repo")
    main.call("Task", {"subagent_type": "general-purpose", "prompt": "list files"}, "3 files")
    side.user("list files")
    side.call("Bash", {"command": "ls"}, "a b c")
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in main.records[:2] + side.records + main.records[2:]))
    first, second = read(path)
    assert [c[0] for c in calls_of(first.segments[0])] == ["Task"]
    assert [c[0] for c in calls_of(second.segments[0])] == ["Bash"]
    assert second.name == "s.jsonl#sidechain-1" and second.id != first.id


def test_without_recorded_tools_the_run_is_read_as_claude_code(tmp_path):
    """Versions before 2.1 record no tools or system prompt: the Claude Code profile still reads
    the run (its Bash description is narration: calls that differ only by it are one call)."""
    log = ClaudeLog()
    log.user("is the job done?")
    for n in range(6):
        log.call("Bash", {"command": "cat status.txt", "description": f"Check the status ({n})"}, "running")
    (run,) = read(log.write(tmp_path / "s.jsonl"))
    assert "tools" not in run.segments[0].body
    policy = load_shipped_policy("default")
    read_as_claude = replay(run, policy)
    assert read_as_claude.profile == "claude_code" and read_as_claude.first_warn is not None
    assert [r.repeat for r in read_as_claude.rows] == [1, 2, 3, 4, 5, 6]
    generic = replay(run, load_policy_text("version: 1\nname: generic\nprofile: none\n"))
    assert generic.profile == "" and [r.repeat for r in generic.rows] == [1] * 6
