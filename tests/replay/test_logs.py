"""Each file's format detected from the file itself, the same reading whatever the format of its
neighbours, and every file that cannot be read named with the reason."""

from __future__ import annotations

import json

import pytest
from support.sessions import SESSIONS, WIRE

from gateway.replay.logs import FORMATS, LogError, Source, format_of, read_source

CLIENT_OF = {"claude_code": "claude_code", "codex": "codex", "gemini_cli": "gemini_cli", "cline": "cline"}


@pytest.mark.parametrize("rel", sorted(WIRE), ids=lambda rel: rel.split("/")[0] + "/" + rel.rsplit("/", 1)[-1][:24])
def test_every_client_log_is_detected_and_read_as_the_client_sent_it(rel):
    source = Source(SESSIONS / rel, rel)
    fmt = format_of(source)
    assert fmt is not None and fmt.name == CLIENT_OF[rel.split("/")[0]]
    run = read_source(source)[0]
    conv = run.segments[-1].conversation()
    results = {t.tool_call_id: t.text for t in conv.turns if t.role == "tool"}

    def parsed(raw):
        try:
            return json.loads(raw)
        except ValueError:
            return raw

    assert [[c.name, parsed(c.arguments), results.get(c.id)] for t in conv.turns for c in t.tool_calls] == WIRE[rel]


def test_the_companion_files_of_the_clients_are_no_logs():
    cline_meta = next((SESSIONS / "cline").rglob("*_*.json"))  # the session's metadata beside its messages
    agent_meta = next((SESSIONS / "claude_code").rglob("agent-*.meta.json"))
    for path in (cline_meta, agent_meta):
        if not path.name.endswith(".messages.json"):
            assert format_of(Source(path, path.name)) is None, path


@pytest.mark.parametrize(
    "name, text, reason",
    [
        ("broken.jsonl", "{not json\n{also not\n", "not a session log"),
        ("empty.json", "", "not a session log"),
        ("settings.json", json.dumps({"theme": "dark"}), "not a session log"),
    ],
)
def test_a_file_no_format_reads_is_named_with_why(tmp_path, name, text, reason):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(LogError, match=reason):
        read_source(Source(path, name))


def test_a_forced_format_reads_only_as_that_format(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    with pytest.raises(LogError, match="claude_code|no records|no conversation"):
        read_source(Source(path, path.name), "claude_code")
    (run,) = read_source(Source(path, path.name), "messages")
    assert run.protocol == "anthropic"  # --format messages reads every body as Anthropic Messages
    assert set(FORMATS) >= {"claude_code", "codex", "gemini_cli", "cline", "openhands", "requests", "chat", "messages"}


def test_a_file_that_cannot_be_opened(tmp_path):
    with pytest.raises(LogError, match="cannot read"):
        read_source(Source(tmp_path / "gone.jsonl", "gone.jsonl"), "requests")
