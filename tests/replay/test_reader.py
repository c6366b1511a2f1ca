"""Reading recorded traffic: JSONL or a JSON list, wrapped or bare bodies, growing bodies merged."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.replay.reader import read_files

FIXTURES = Path(__file__).parents[1] / "fixtures" / "replay"


def test_growing_bodies_of_interleaved_conversations_become_one_each():
    reading = read_files([FIXTURES / "coding_agent.jsonl"])
    assert reading.bodies == 16 and not reading.problems
    assert [(c.name, c.requests, c.messages) for c in reading.conversations] == [
        ("coding_agent.jsonl:11", 6, 12),
        ("coding_agent.jsonl:16", 10, 20),
    ]


def test_json_list_of_bare_and_wrapped_bodies():
    reading = read_files([FIXTURES / "support_bot.json"])
    assert [c.name for c in reading.conversations] == ["support_bot.json:1", "support_bot.json:2"]
    assert reading.conversations[0].body["model"] == "gpt-4o-mini"
    assert "model" not in reading.conversations[1].body  # {"messages": [...]} only


def test_bad_lines_are_reported_and_skipped(tmp_path):
    path = tmp_path / "mixed.jsonl"
    good = {"messages": [{"role": "user", "content": "hi"}]}
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{not json",
                json.dumps({"model": "x"}),
                json.dumps({"request": {"messages": [{"role": "user", "content": "other"}]}}),
                "",
            ]
        )
    )
    reading = read_files([path])
    assert len(reading.conversations) == 2
    assert [p.split(": ", 1)[0] for p in reading.problems] == [f"{path}:2", f"{path}:3"]
    assert "invalid JSON" in reading.problems[0] and "no messages" in reading.problems[1]


def test_a_body_that_is_not_a_prefix_is_its_own_conversation(tmp_path):
    base = [{"role": "system", "content": "s"}, {"role": "user", "content": "task"}]
    bodies = [
        {"messages": base},
        {"messages": [*base, {"role": "assistant", "content": "a"}]},
        {"messages": [*base, {"role": "assistant", "content": "b"}]},
    ]  # a branch, e.g. a retry
    path = tmp_path / "branches.jsonl"
    path.write_text("".join(json.dumps(b) + "\n" for b in bodies))
    conversations = read_files([path]).conversations
    assert [c.name for c in conversations] == ["branches.jsonl:2", "branches.jsonl:3"]
    assert sum(c.requests for c in conversations) == 3


def test_unreadable_file_is_a_problem_not_a_crash(tmp_path):
    reading = read_files([tmp_path / "absent.jsonl"])
    assert reading.conversations == [] and "cannot read" in reading.problems[0]


def test_anthropic_bodies_are_read_in_their_own_protocol(tmp_path):
    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "system": "Be brief.",
        "messages": [
            {"role": "user", "content": "read a"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}}],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "A", "is_error": True}],
            },
        ],
    }
    path = tmp_path / "claude.jsonl"
    path.write_text(json.dumps({"request": body}) + "\n")
    (recorded,) = read_files([path]).conversations
    turns = recorded.conversation().turns
    assert [(t.role, t.index) for t in turns] == [("system", -1), ("user", 0), ("assistant", 1), ("tool", 2)]
    assert turns[2].tool_calls[0].name == "read_file" and turns[3].is_error is True
