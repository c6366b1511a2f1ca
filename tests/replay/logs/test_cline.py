"""Cline and Roo Code read as the chat-completions requests their OpenAI-compatible providers send:
the pinned Cline CLI's session file, and the extensions' task folders with tools used natively
or as XML in the text (each answered by a "[tool for '...'] Result:" message)."""

from __future__ import annotations

import json

from support.sessions import calls_of, read, session_log, wire_calls

from gateway.policy.loader import load_shipped_policy
from gateway.replay.logs import Source, format_of, read_source
from gateway.replay.runner import replay

ENVIRONMENT = "<environment_details>\n# Current Time\n6/1/2025, 10:0{n}:00 AM\n</environment_details>"


def test_the_cli_session_is_the_requests_it_sent():
    path = session_log("cline", "healthy")
    (run,) = read(path)
    assert run.format == "cline" and run.protocol == "chat" and run.profile == "cline"
    (segment,) = run.segments
    assert calls_of(segment) == wire_calls(path)
    system, user = segment.messages[:2]
    assert system["role"] == "system" and system["content"].startswith("You are Cline")
    assert user == {"role": "user", "content": "Go through the work."}  # as the CLI sent it, unwrapped
    tool = next(m for m in segment.messages if m["role"] == "tool")
    assert tool["content"].startswith('[{"query":')  # each element's JSON, as the model got it


def test_the_looping_session_is_warned():
    (run,) = read(session_log("cline", "loop"))
    result = replay(run, load_shipped_policy("default"))
    assert result.profile == "cline" and len(result.rows) == 20 and result.first_warn is not None


def xml_task(rounds: int, result: str = "status: running") -> list[dict]:
    history = [{"role": "user", "content": [{"type": "text", "text": "<task>\nWatch the job\n</task>"}]}]
    for n in range(rounds):
        text = "Let me check again.\n\n<read_file>\n<path>status.txt</path>\n</read_file>"
        history.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        blocks = ["[read_file for 'status.txt'] Result:", result, ENVIRONMENT.format(n=n)]
        history.append({"role": "user", "content": [{"type": "text", "text": b} for b in blocks]})
    return history


def test_a_task_folder_with_tools_in_the_text(tmp_path):
    folder = tmp_path / "saoudrizwan.claude-dev" / "tasks" / "1748771234567"
    folder.mkdir(parents=True)
    (folder / "api_conversation_history.json").write_text(json.dumps(xml_task(6)))
    (folder / "ui_messages.json").write_text("[]")
    path = folder / "api_conversation_history.json"
    source = Source(path, path.name)
    assert format_of(source).name == "cline"
    assert format_of(Source(folder / "ui_messages.json", "ui_messages.json")) is None
    (run,) = read_source(source)
    assert run.id == "1748771234567" and run.profile == "cline"
    segment = run.segments[0]
    assert calls_of(segment) == [["read_file", {"path": "status.txt"}, "status: running"]] * 6
    # The editor's context is no user message: the six rounds are one run for the detectors.
    assert [m["role"] for m in segment.messages].count("user") == 1
    assert "environment_details" not in json.dumps(segment.messages)
    assert "Let me check again." in segment.messages[1]["content"]
    result = replay(run, load_shipped_policy("default"))
    assert result.first_warn is not None and result.first_stop is not None


def test_native_tool_use_and_a_cut_run_in_roo_code(tmp_path):
    use = {"type": "tool_use", "id": "toolu_1", "name": "execute_command", "input": {"command": "npm test"}}
    answer = {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "1 failing"}]}
    history = [
        {"role": "user", "content": [{"type": "text", "text": "<task>fix the tests</task>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Running them."}, use]},
        {"role": "user", "content": [answer, {"type": "text", "text": ENVIRONMENT.format(n=1)}]},
        {"role": "assistant", "content": "<execute_command>\n<command>npm test -- -u</command>\n</execute_command>"},
    ]
    folder = tmp_path / "rooveterinaryinc.roo-cline" / "tasks" / "t-1"
    folder.mkdir(parents=True)
    (folder / "api_conversation_history.json").write_text(json.dumps(history))
    (run,) = read(folder / "api_conversation_history.json")
    assert run.agent == "roo_code" and run.profile is None
    calls = calls_of(run.segments[0])
    assert calls == [
        ["execute_command", {"command": "npm test"}, "1 failing"],
        ["execute_command", {"command": "npm test -- -u"}, None],
    ]
    assert [m["role"] for m in run.segments[0].messages] == ["user", "assistant", "tool", "assistant"]
