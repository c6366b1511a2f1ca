"""Codex rollouts read as the Responses requests the CLI sent: the pinned CLI's (exec_command,
the freeform apply_patch), the first releases' bare items with the ``shell`` tool, the envelope
with ``shell_command``, and a compaction."""

from __future__ import annotations

import json

from support.sessions import calls_of, read, session_log, wire_calls, write_jsonl

from gateway.policy.loader import load_shipped_policy
from gateway.replay.logs import Source, format_of, read_source
from gateway.replay.runner import replay


def parsed(arguments):
    try:
        return json.loads(arguments)
    except ValueError:
        return arguments  # a freeform tool's input


def test_the_cli_rollout_is_the_requests_it_sent():
    path = session_log("codex", "healthy")
    (run,) = read(path)
    assert run.format == "codex" and run.protocol == "responses" and run.id == run.session
    assert run.id in path.name  # the rollout is named after its session
    (segment,) = run.segments
    assert calls_of(segment, parsed) == wire_calls(path)
    assert [c[0] for c in calls_of(segment, parsed)] == ["exec_command", "exec_command", "apply_patch", "exec_command"]
    # Its requests open with the base instructions as a developer message.
    first = segment.messages[0]
    assert first["role"] == "developer" and first["content"][0]["text"].startswith("You are Codex")
    assert not any("metadata" in item for item in segment.messages)  # the rollout's own bookkeeping


def test_the_looping_rollout_is_read_through_the_codex_profile():
    (run,) = read(session_log("codex", "loop"))
    result = replay(run, load_shipped_policy("default"))
    assert result.profile == "codex" and len(result.rows) == 20
    assert result.first_warn is not None and result.first_stop is not None


def shell_item(n, argv):
    arguments = json.dumps({"command": argv, "workdir": "/w"})
    return {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": f"call_{n}"}


def test_the_first_releases_bare_items_and_the_shell_tool(tmp_path):
    records = [{"id": "0196f5b6-aaaa", "timestamp": "2025-05-20T10:00:00.000Z", "instructions": None}]
    records.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "What is in x?"}]})
    for n in range(6):
        records.append({"record_type": "state"})
        records.append(shell_item(n, ["bash", "-lc", "cat x.txt"]))
        failed = {"output": "cat: x.txt: No such file or directory\n", "metadata": {"exit_code": 1}}
        records.append({"type": "function_call_output", "call_id": f"call_{n}", "output": json.dumps(failed)})
    path = write_jsonl(tmp_path / "sessions" / "rollout-2025-05-20T10-00-00-0196f5b6-aaaa.jsonl", records)
    source = Source(path, path.name)
    assert format_of(source).name == "codex"
    (run,) = read_source(source)
    assert run.id == "0196f5b6-aaaa" and len(calls_of(run.segments[0])) == 6
    assert calls_of(run.segments[0])[0][1]["command"] == ["bash", "-lc", "cat x.txt"]
    result = replay(run, load_shipped_policy("default"))
    assert result.profile == "codex"  # nothing in the requests names the client: the log does
    assert result.first_warn is not None


def envelope(kind, payload):
    return {"timestamp": "2025-10-01T10:00:00.000Z", "type": kind, "payload": payload}


def test_shell_command_calls_in_the_envelope(tmp_path):
    records = [envelope("session_meta", {"id": "s-1", "cli_version": "0.50.0", "instructions": "Be careful."})]
    records.append(envelope("turn_context", {"model": "gpt-5-codex"}))
    records.append(envelope("response_item", {"type": "message", "role": "user", "content": "run the tests"}))
    arguments = json.dumps({"command": "pytest -q", "workdir": "/w"})
    records.append(
        envelope(
            "response_item", {"type": "function_call", "name": "shell_command", "arguments": arguments, "call_id": "c1"}
        )
    )
    output = "Exit code: 1\nWall time: 0.4 seconds\nOutput:\n1 failed\n"
    records.append(envelope("response_item", {"type": "function_call_output", "call_id": "c1", "output": output}))
    (run,) = read(write_jsonl(tmp_path / "rollout-x.jsonl", records))
    segment = run.segments[0]
    assert calls_of(segment, parsed) == [["shell_command", {"command": "pytest -q", "workdir": "/w"}, output]]
    assert segment.body["instructions"] == "Be careful." and segment.body["model"] == "gpt-5-codex"


def test_a_compaction_starts_a_segment(tmp_path):
    user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}
    call = {"type": "function_call", "name": "exec_command", "arguments": '{"cmd": "make"}', "call_id": "c1"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "Process exited with code 2"}
    records = [envelope("session_meta", {"id": "s-2"})]
    records += [envelope("response_item", item) for item in (user, call, out)]
    records.append(envelope("compacted", {"message": "Summary: make fails with code 2."}))
    records += [envelope("response_item", item) for item in (call, out)]
    (run,) = read(write_jsonl(tmp_path / "rollout-y.jsonl", records))
    first, second = run.segments
    assert len(first.messages) == 3
    assert [m.get("type") for m in second.messages] == ["message", "message", "function_call", "function_call_output"]
    assert second.messages[1]["content"][0]["text"] == "Summary: make fails with code 2."
