"""What the console keeps of a run: excerpts with secrets masked, the newest calls within the
byte budget per run, and the text that was sent, captured from a real looping run."""

from __future__ import annotations

import asyncio

import openai
import orjson
from support.agent import Agent
from support.guarded import guarded, wait_for
from support.upstream import Reply

from gateway.console.mask import MASK, excerpt, mask

SECRET = "sk-live-abcdefghijklmnopqrstuvwxyz0123"


def wanders_then_loops(request: dict) -> Reply:
    """Reads twelve different files, then the same one forever."""
    done = sum(1 for m in request["messages"] if m.get("role") == "tool")
    path = f"dir/file{done}.txt" if done < 12 else "env.txt"
    return Reply(tool_calls=[("read_file", f'{{"path": "{path}", "password": "hunter2"}}')])


def test_a_run_is_kept_masked_and_within_its_byte_budget(tmp_path):
    budget = 4096
    with guarded(wanders_then_loops, tmp_path, ui={"max_run_bytes": budget}) as g:
        client = openai.OpenAI(base_url=g.url + "/v1", api_key="sk-test", max_retries=0, timeout=30)
        tools = {"read_file": lambda a: f"OPENAI_API_KEY={SECRET}\nAuthorization: Bearer {SECRET}\n" + "x" * 5000}
        Agent(client, tools=tools, headers={"x-loopguard-session": "kept"}).run("inspect", max_steps=30)
        store = g.gateway.store
        assert wait_for(lambda: g.gateway.audit.find("console").written >= 3)
        logged = asyncio.run(store.recent_events(100))
        details = [asyncio.run(store.event_detail(e.detail)) for e in logged if e.detail]
        assert details and all(len(d) <= budget for d in details)
        for raw in [e.entry for e in logged] + details:
            assert SECRET.encode() not in raw and b"hunter2" not in raw
        newest = orjson.loads(details[0])
        assert newest["omitted"] > 0  # twelve wandering calls did not all fit
        executed = [row for row in newest["rows"] if row[6] == ""]  # ran, with the tool's own result
        assert executed[-1][2] == "read_file" and MASK in executed[-1][4] and MASK in executed[-1][3]
        assert newest["text"] and newest["text_kind"]


def test_excerpts_are_capped_and_masked():
    assert excerpt("a  b\n\nc", 10) == "a b c"
    assert len(excerpt("y" * 1000, 50)) == 50
    assert excerpt(None, 10) is None
    for secret in (
        "sk-ant-api03-abcdefghijklmnop",
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_abcdefghijklmnopqrstuvwxyz012345",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ):
        assert secret not in mask(f"value: {secret} end")
    assert mask("redis://:pw-secret@host:6379/0") == f"redis://:{MASK}@host:6379/0"
    assert mask('{"client_secret": "abc", "path": "a.txt"}') == f'{{"client_secret": "{MASK}", "path": "a.txt"}}'
    assert mask("max_tokens=100 author=me") == "max_tokens=100 author=me"  # not secrets
