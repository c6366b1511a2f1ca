"""Recorded Responses API bodies replay like chat ones: the same run in either wire format gets
the same row."""

from __future__ import annotations

import io
import json

from gateway.replay.command import run_replay
from gateway.replay.reader import read_files

PROMPT = "Why does the date test fail?"
INSTRUCTIONS = "You are a coding agent."


def responses_bodies(rounds: int) -> list[dict]:
    """The growing bodies a Responses agent sends (whole history, ``store: false``)."""
    items: list[dict] = [{"role": "user", "content": PROMPT}]
    bodies = []
    for n in range(rounds):
        bodies.append(
            {
                "model": "gpt-4.1",
                "instructions": INSTRUCTIONS,
                "store": False,
                "input": list(items),
                "tools": [{"type": "function", "name": "read_file", "parameters": {"type": "object"}}],
            }
        )
        items.append(
            {
                "type": "function_call",
                "id": f"fc_{n}",
                "call_id": f"call_{n}",
                "name": "read_file",
                "arguments": '{"path": "tests/test_dates.py"}',
                "status": "completed",
            }
        )
        items.append({"type": "function_call_output", "call_id": f"call_{n}", "output": "def test_format(): ..."})
    return bodies


def chat_bodies(rounds: int) -> list[dict]:
    messages: list[dict] = [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": PROMPT}]
    bodies = []
    for n in range(rounds):
        bodies.append(
            {
                "model": "gpt-4.1",
                "messages": list(messages),
                "tools": [{"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}}],
            }
        )
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "tests/test_dates.py"}'},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"call_{n}", "content": "def test_format(): ..."})
    return bodies


def write(path, bodies) -> str:
    path.write_text("\n".join(json.dumps(b) for b in bodies) + "\n")
    return str(path)


def rows(*files: str) -> dict[str, list[str]]:
    out = io.StringIO()
    assert run_replay(list(files), "default", out=out, err=io.StringIO()) == 0
    return {
        line.split()[0]: line.split()[1:]
        for line in out.getvalue().splitlines()[2:]
        if line.split() and ".jsonl" in line.split()[0]
    }


def test_growing_responses_bodies_are_one_conversation(tmp_path):
    chained = {
        "model": "gpt-4.1",
        "previous_response_id": "resp_1",
        "input": [{"type": "function_call_output", "call_id": "call_9", "output": "x"}],
    }
    wrapped = {"request": {"model": "gpt-4.1", "input": "Just a question"}, "response": {"id": "resp_2"}}
    reading = read_files([write(tmp_path / "agent.jsonl", [*responses_bodies(8), chained, wrapped])])
    assert not reading.problems and reading.bodies == 10
    assert [(c.name, c.protocol, c.requests, c.messages) for c in reading.conversations] == [
        ("agent.jsonl:8", "responses", 8, 15),
        ("agent.jsonl:9", "responses", 1, 1),
        ("agent.jsonl:10", "responses", 1, 1),
    ]


def test_the_same_run_gets_the_same_row_in_either_format(tmp_path):
    responses = rows(write(tmp_path / "responses.jsonl", responses_bodies(10)))
    chat = rows(write(tmp_path / "chat.jsonl", chat_bodies(10)))
    [(_, row)] = responses.items()
    [(_, expected)] = chat.items()
    assert row[1:] == expected[1:]  # tool calls, first warn / reject / terminate, detector
    assert row[2] != "-"  # the loop is seen
