"""OpenHands event logs read as the chat-completions requests OpenHands made from them: a
conversation's events folder before 1.0 (actions with the model's response, observations framed
by the runtime's lines) and from the 1.0 SDK on (events by kind), and a resolver's trajectories."""

from __future__ import annotations

import json

from support.sessions import calls_of, read, write_jsonl

from gateway.policy.loader import load_shipped_policy
from gateway.replay.logs import Source, format_of, read_source
from gateway.replay.runner import replay
from gateway.replay.sources import find

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {}}} for n in ("execute_bash", "str_replace_editor")
]


def v0_events(rounds: int, parallel: bool = False) -> list[dict]:
    events = [
        {
            "id": 0,
            "source": "agent",
            "action": "system",
            "args": {"content": "You are OpenHands agent.", "tools": TOOLS},
        },
        {"id": 1, "source": "user", "action": "message", "args": {"content": "Is the job done?"}},
    ]
    for n in range(rounds):
        commands = ["cat status.txt", "ls"] if parallel else ["cat status.txt"]
        calls = [
            {
                "id": f"call_{n}_{k}",
                "type": "function",
                "function": {"name": "execute_bash", "arguments": json.dumps({"command": c})},
            }
            for k, c in enumerate(commands)
        ]
        response = {
            "id": f"resp_{n}",
            "model": "gpt-4o",
            "choices": [{"message": {"content": None, "tool_calls": calls}}],
        }
        for k, command in enumerate(commands):
            meta = {"function_name": "execute_bash", "tool_call_id": f"call_{n}_{k}", "model_response": response}
            action = {"id": len(events), "source": "agent", "action": "run", "tool_call_metadata": meta}
            events.append({**action, "args": {"command": command, "thought": "", "blocking": False}})
        for k, command in enumerate(commands):
            extras = {
                "command": command,
                "metadata": {"exit_code": 0, "suffix": "\n[The command completed with exit code 0.]"},
            }
            meta = {"function_name": "execute_bash", "tool_call_id": f"call_{n}_{k}"}
            events.append(
                {
                    "id": len(events),
                    "source": "agent",
                    "observation": "run",
                    "cause": len(events) - len(commands),
                    "content": "running",
                    "extras": extras,
                    "tool_call_metadata": meta,
                }
            )
    events.append({"id": len(events), "source": "agent", "observation": "agent_state_changed", "content": ""})
    return events


def write_events(folder, events, name=lambda e: f"{e['id']}.json"):
    folder.mkdir(parents=True)
    for event in events:
        (folder / name(event)).write_text(json.dumps(event))
    return folder


def test_an_events_folder_before_1_0(tmp_path):
    folder = write_events(tmp_path / "sessions" / "abc123" / "events", v0_events(12))
    found = find([str(tmp_path)])
    assert [s.rel for s in found.sources] == ["sessions/abc123/events"]  # the folder is one log
    source = found.sources[0]
    assert format_of(source).name == "openhands"
    (run,) = read_source(source)
    assert run.id == "abc123" and run.profile == "openhands"
    calls = calls_of(run.segments[0])
    assert calls[0] == [
        "execute_bash",
        {"command": "cat status.txt"},
        "running\n[The command completed with exit code 0.]",
    ]
    assert len(calls) == 12 and run.segments[0].body["model"] == "gpt-4o"
    assert folder.name == "events"
    result = replay(run, load_shipped_policy("default"))
    assert result.profile == "openhands" and result.first_warn is not None


def test_the_calls_of_one_response_are_one_message(tmp_path):
    folder = write_events(tmp_path / "events", v0_events(2, parallel=True))
    (run,) = read_source(Source(folder, "events"))
    replies = [m for m in run.segments[0].messages if m["role"] == "assistant"]
    assert [len(m["tool_calls"]) for m in replies] == [2, 2]


def sdk_events(rounds: int) -> list[dict]:
    events = [
        {
            "kind": "SystemPromptEvent",
            "id": "e0",
            "source": "agent",
            "system_prompt": {"type": "text", "text": "You are OpenHands agent."},
            "tools": [
                {"name": "terminal", "description": "Run a command"},
                {"name": "file_editor", "description": "Edit"},
            ],
        },
        {
            "kind": "MessageEvent",
            "id": "e1",
            "source": "user",
            "llm_message": {"role": "user", "content": [{"type": "text", "text": "build it"}]},
        },
    ]
    for n in range(rounds):
        call = {
            "id": f"tc{n}",
            "name": "terminal",
            "arguments": json.dumps({"command": "make"}),
            "origin": "completion",
        }
        events.append(
            {
                "kind": "ActionEvent",
                "id": f"a{n}",
                "source": "agent",
                "thought": [{"type": "text", "text": "Build."}],
                "tool_name": "terminal",
                "tool_call_id": f"tc{n}",
                "tool_call": call,
                "llm_response_id": f"r{n}",
                "action": {"command": "make"},
            }
        )
        observation = {
            "kind": "TerminalObservation",
            "content": [{"type": "text", "text": "make: *** Error 2"}],
            "is_error": True,
        }
        events.append(
            {
                "kind": "ObservationEvent",
                "id": f"o{n}",
                "source": "environment",
                "tool_name": "terminal",
                "tool_call_id": f"tc{n}",
                "observation": observation,
                "action_id": f"a{n}",
            }
        )
    return events


def test_an_events_folder_of_the_sdk(tmp_path):
    events = sdk_events(5)
    folder = write_events(
        tmp_path / "conversations" / "c9" / "events", events, lambda e: f"event-{events.index(e):05d}-{e['id']}.json"
    )
    (run,) = read_source(Source(folder, "c9/events"))
    segment = run.segments[0]
    assert calls_of(segment) == [["terminal", {"command": "make"}, "make: *** Error 2"]] * 5
    assert {t["function"]["name"] for t in segment.body["tools"]} == {"terminal", "file_editor"}
    assert segment.messages[0] == {"role": "system", "content": "You are OpenHands agent."}


def test_trajectories_in_json_lines(tmp_path):
    lines = [{"instance_id": f"repo__issue-{n}", "history": v0_events(3)} for n in range(2)]
    path = write_jsonl(tmp_path / "output.jsonl", lines)
    runs = read_source(Source(path, "output.jsonl"))
    assert [(r.name, r.id) for r in runs] == [("output.jsonl:1", "repo__issue-0"), ("output.jsonl:2", "repo__issue-1")]
    assert all(len(calls_of(r.segments[0])) == 3 for r in runs)
