"""The table: where the policy would have acted in each recorded conversation."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gateway.policy.loader import load_shipped_policy
from gateway.replay.command import run_replay
from gateway.replay.reader import read_files
from gateway.replay.runner import replay

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"
ALL = [str(p) for p in sorted(FIXTURES.glob("*.json*"))]


def table(*files: str, policy: str = "default", **options) -> tuple[int, dict[str, list[str]], str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_replay(list(files), policy, out=out, err=err, **options)
    rows = {}
    for line in out.getvalue().splitlines()[2:]:
        cells = line.split()
        if cells and ".json" in cells[0]:
            rows[cells[0]] = cells[1:]
    return code, rows, out.getvalue()


def test_table_of_the_shipped_default_policy():
    code, rows, text = table(*ALL)
    assert code == 0
    assert text.splitlines()[0].split() == [
        "conversation",
        "messages",
        "tool",
        "calls",
        "first",
        "warn",
        "first",
        "reject",
        "first",
        "terminate",
        "detector",
    ]
    # messages, tool calls, first warn, first reject, first terminate, detector
    # The model asks for the vetoed call again right after: the re-asks end the run at that step
    # (the gateway's ladder for a never-changing model), not at step 8 of a recording that
    # would not have happened past the veto.
    assert rows["support_bot.json:1"] == ["22", "10", "3", "5", "5", "no_progress"]
    assert rows["coding_agent.jsonl:16"] == ["20", "9", "3", "5", "5", "no_progress"]
    assert rows["research_agent.jsonl:11"] == ["22", "10", "5", "9", "-", "no_progress"]
    assert rows["coding_agent.jsonl:11"] == ["12", "5", "-", "-", "-", "-"]  # healthy
    assert rows["support_bot.json:2"] == ["6", "2", "-", "-", "-", "-"]
    assert "5 conversations, 3 affected (3 warn, 3 reject, 2 terminate)" in text


def test_warn_only_pack_never_rejects_or_terminates():
    _, rows, text = table(*ALL, policy="warn-only")
    assert rows["support_bot.json:1"][2:5] == ["3", "-", "-"]
    assert "0 reject, 0 terminate" in text


def test_shadow_pack_shows_what_it_would_do():
    out, err = io.StringIO(), io.StringIO()
    assert run_replay(ALL, "shadow", out=out, err=err) == 0
    assert "shadow policy" in err.getvalue()
    assert table(*ALL)[1] == table(*ALL, policy="shadow")[1]


def test_per_detector_first_steps_and_the_stop_point():
    policy = load_shipped_policy("default")
    research = read_files([FIXTURES / "research_agent.jsonl"]).conversations[0]
    result = replay(research, policy)
    assert result.by_detector["cycle"] == {"warn": 6}  # search/open, three rounds
    assert result.by_detector["no_progress"] == {"warn": 5, "reject": 9}
    assert result.cut_step == 9 and result.cut == 19  # the message after the vetoed call's turn
    assert [r.repeat for r in result.rows] == [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


def test_agent_overrides_resolve_by_header(tmp_path):
    policy = tmp_path / "agents.yaml"
    policy.write_text(
        "version: 1\nagents:\n  - match: {header: support}\n    detectors:\n"
        "      no_progress: {warn_at: 4, reject_at: 6, terminate_at: 9}\n"
        "      exact_repeat: false\n      similar_repeat: false\n"
    )
    file = str(FIXTURES / "support_bot.json")
    assert table(file, policy=str(policy))[1]["support_bot.json:1"][2:5] == ["3", "5", "5"]
    assert table(file, policy=str(policy), agent="support")[1]["support_bot.json:1"][2:5] == ["4", "6", "6"]


def test_a_parallel_round_is_cut_at_the_refused_call(tmp_path):
    def call(n, path):
        return {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "read", "arguments": f'{{"p": "{path}"}}'},
        }

    messages = [{"role": "user", "content": "go"}]
    for n in range(4):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call(n, "a")]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": "same"},
        ]
    messages += [
        {"role": "assistant", "content": None, "tool_calls": [call(8, "a"), call(9, "b")]},
        {"role": "tool", "tool_call_id": "c8", "content": "same"},
        {"role": "tool", "tool_call_id": "c9", "content": "b"},
    ]
    path = tmp_path / "parallel.jsonl"
    path.write_text(__import__("json").dumps({"model": "gpt-4o", "messages": messages}) + "\n")
    result = replay(read_files([path]).conversations[0], load_shipped_policy("default"))
    fifth, sixth = result.rows[4], result.rows[5]
    assert [m.action for m in fifth.marks] == ["reject"] and sixth.dropped


@pytest.mark.parametrize("problem", ["missing-policy", "no-input"])
def test_errors_exit_1(tmp_path, problem):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    files, policy = ([str(empty)], "default") if problem == "no-input" else (ALL, str(tmp_path / "nope.yaml"))
    err = io.StringIO()
    assert run_replay(files, policy, out=io.StringIO(), err=err) == 1
    assert err.getvalue().startswith("loopguard: ")


def _as_anthropic(body: dict) -> dict:
    """A chat body rewritten as the same conversation on the Anthropic Messages API."""
    out, system = [], []
    for m in body["messages"]:
        if m["role"] == "system":
            system.append(m["content"])
        elif m["role"] == "tool":
            result = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        elif m["role"] == "assistant":
            blocks = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            blocks += [
                {
                    "type": "tool_use",
                    "id": c["id"],
                    "name": c["function"]["name"],
                    "input": json.loads(c["function"]["arguments"]),
                }
                for c in m.get("tool_calls") or ()
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return {"model": "claude-sonnet-4-6", "max_tokens": 1024, "system": "\n".join(system), "messages": out}


@pytest.mark.parametrize("source", ["support_bot.json", "coding_agent.jsonl", "research_agent.jsonl"])
def test_anthropic_bodies_replay_like_the_same_chat_conversation(tmp_path, source):
    chat = read_files([FIXTURES / source]).conversations
    path = tmp_path / "claude.jsonl"
    path.write_text("".join(json.dumps(_as_anthropic(c.body)) + "\n" for c in chat))
    _, chat_rows, _ = table(str(FIXTURES / source))
    _, claude_rows, _ = table(str(path))
    # Same calls, same first warn / reject / terminate step, same detector; only the message
    # count differs (results of one round share a user turn, the system prompt is outside).
    assert [r[1:] for r in claude_rows.values()] == [r[1:] for r in chat_rows.values()]
