"""Replay runs the server's request path, session state included: a conversation recorded after
the agent compacted its history continues the session of the one recorded before it, so the
post-compaction guard fires in replay exactly where it would have fired in the gateway."""

from __future__ import annotations

import io
import json

from gateway.detectors import REGISTRY
from gateway.policy.loader import load_policy_text
from gateway.replay.command import run_replay
from gateway.replay.reader import read_files
from gateway.replay.runner import replay
from gateway.state.memory import MemoryStore

ONLY_COMPACTION = "version: 1\nname: only-compaction\ndetectors:\n" + "".join(
    f"  {name}: false\n" for name in REGISTRY if name != "post_compaction"
)
SYSTEM = {"role": "system", "content": "You are a coding agent."}
TASK = {"role": "user", "content": "summarize a.txt"}


def reads(count: int, start: int = 0) -> list[dict]:
    messages = []
    for i in range(start, start + count):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "content": "contents of a.txt"})
    return messages


def recording(tmp_path):
    """Before: 4 reads. The agent then keeps its system prompt and task, adds a summary and
    reads the same file 3 more times (the last body carries the 3rd result)."""
    before = {"model": "gpt-4o-mini", "messages": [SYSTEM, TASK, *reads(4)]}
    summary = {"role": "user", "content": "Summary of the work so far: a.txt was read several times. Continue."}
    after = {"model": "gpt-4o-mini", "messages": [SYSTEM, TASK, summary, *reads(3, start=4)]}
    path = tmp_path / "compacting.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in (before, after)) + "\n", encoding="utf-8")
    return path


def test_a_loop_that_survives_compaction_is_terminated_in_replay(tmp_path):
    policy = load_policy_text(ONLY_COMPACTION)
    first, second = read_files([recording(tmp_path)]).conversations
    store = MemoryStore()
    assert not replay(first, policy, store=store).affected
    result = replay(second, policy, store=store)
    assert result.first == {"terminate": (3, "post_compaction")}  # the 3rd read after the compaction
    (mark,) = [m for row in result.rows for m in row.marks]
    assert mark.phase == "request" and mark.count == 3


def test_without_the_earlier_conversation_there_is_no_compaction_to_see(tmp_path):
    policy = load_policy_text(ONLY_COMPACTION)
    _, second = read_files([recording(tmp_path)]).conversations
    assert not replay(second, policy).affected  # a fresh session: nothing was compacted


def test_the_replay_command_carries_the_session_across_conversations(tmp_path):
    policy_file = tmp_path / "only-compaction.yaml"
    policy_file.write_text(ONLY_COMPACTION, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run_replay([str(recording(tmp_path))], str(policy_file), out=out, err=err, quiet=True) == 0
    row = next(line.split() for line in out.getvalue().splitlines() if "compacting.jsonl:2" in line)
    assert row[-2:] == ["3", "post_compaction"]
