"""Gemini CLI chats and checkpoints read as the Gemini requests the CLI sent: the pinned CLI's
chat lines (messages by id, a later line replacing an earlier one, results written twice), the
older one-object chat, and a checkpoint."""

from __future__ import annotations

import json

from support.sessions import calls_of, read, session_log, wire_calls, write_jsonl

from gateway.policy.loader import load_shipped_policy
from gateway.replay.logs import Source, format_of, read_source
from gateway.replay.runner import replay


def test_the_cli_chat_is_the_requests_it_sent():
    path = session_log("gemini_cli", "healthy")
    (run,) = read(path)
    assert run.format == "gemini_cli" and run.protocol == "gemini" and run.model == "gemini-3.8-flash"
    (segment,) = run.segments
    assert calls_of(segment) == wire_calls(path)
    # Each result once, though the CLI wrote it with its call and again as a user message.
    responses = [p for c in segment.messages for p in c["parts"] if "functionResponse" in p]
    assert len(responses) == len(calls_of(segment)) == 4


def test_the_looping_chat_is_read_through_the_gemini_cli_profile():
    (run,) = read(session_log("gemini_cli", "loop"))
    result = replay(run, load_shipped_policy("default"))
    assert result.profile == "gemini_cli"  # the chat records neither tools nor system instruction
    assert len(result.rows) == 30 and result.first_warn is not None


def shell(n, command, output):
    response = {"id": f"c{n}", "name": "run_shell_command", "response": {"output": output}}
    return {
        "id": f"c{n}",
        "name": "run_shell_command",
        "args": {"command": command},
        "result": [{"functionResponse": response}],
        "status": "success",
    }


def test_an_older_chat_object_with_notices(tmp_path):
    messages = [{"id": "m0", "type": "user", "content": "Is the build green?"}]
    messages.append({"id": "m1", "type": "info", "content": "Switched to fallback model."})
    for n in range(3):
        messages.append(
            {"id": f"g{n}", "type": "gemini", "content": "", "toolCalls": [shell(n, "make", "Exit Code: 2")]}
        )
    messages.append({"id": "m9", "type": "gemini", "content": "It is not.", "model": "gemini-2.5-pro"})
    chat = {"sessionId": "abc", "projectHash": "f00", "startTime": "2025-08-01T10:00:00Z", "messages": messages}
    path = tmp_path / "chats" / "session-2025-08-01T10-00-abc.json"
    path.parent.mkdir()
    path.write_text(json.dumps(chat))
    (run,) = read(path)
    assert run.id == "abc" and run.model == "gemini-2.5-pro"
    contents = run.segments[0].messages
    assert [c["role"] for c in contents] == ["user", "model", "user", "model", "user", "model", "user", "model"]
    assert "fallback" not in json.dumps(contents)  # the CLI's notice never went to the model
    assert [c[2] for c in calls_of(run.segments[0])] == ["Exit Code: 2"] * 3  # the output, as the adapter reads it


def test_a_checkpoint_is_the_history_as_sent(tmp_path):
    history = [{"role": "user", "parts": [{"text": "read a.txt"}]}]
    for _ in range(2):
        call = {"functionCall": {"name": "read_file", "args": {"file_path": "a.txt"}}}
        answer = {"functionResponse": {"name": "read_file", "response": {"output": "A"}}}
        history += [{"role": "model", "parts": [call]}, {"role": "user", "parts": [answer]}]
    path = tmp_path / "checkpoint-before-refactor.json"
    path.write_text(json.dumps(history))
    source = Source(path, path.name)
    assert format_of(source).name == "gemini_cli"
    (run,) = read_source(source)
    assert run.segments[0].messages == history


def test_a_later_line_replaces_an_earlier_one_with_the_same_id(tmp_path):
    header = {"sessionId": "s", "projectHash": "p", "startTime": "t", "lastUpdated": "t", "kind": "main"}
    first = {"id": "g1", "type": "gemini", "content": ""}
    done = {**first, "toolCalls": [shell(1, "ls", "a b")]}
    records = [header, {"$set": {"messages": [{"id": "u0", "type": "user", "content": [{"text": "list"}]}]}}]
    records += [first, {"$set": {"lastUpdated": "t2"}}, done]
    (run,) = read(write_jsonl(tmp_path / "session-x.jsonl", records))
    assert [c[0] for c in calls_of(run.segments[0])] == ["run_shell_command"]
    assert run.segments[0].messages[0]["parts"] == [{"text": "list"}]
