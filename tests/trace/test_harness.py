"""A harness's own nudges are not the user's words, and actions written as ```bash blocks are
read as calls whose result is the next user message (gateway/trace/harness.py)."""

from __future__ import annotations

import json

import pytest

from gateway.agents.catalog import derive
from gateway.policy.strict_yaml import shipped_profiles
from gateway.trace.builder import build_trace
from gateway.trace.harness import HARNESS, TEXT_TOOL, harness_view
from gateway.trace.model import Conversation, Status, ToolCall, Turn
from gateway.trace.settings import TraceSettings

NUDGING = TraceSettings(nudge_patterns=(r"^Tool call error: No tool calls found",))
TEXT = TraceSettings(
    text_actions="bash_block",
    nudge_patterns=(r"^Please always provide EXACTLY ONE action",),
    error_patterns=(r"<returncode>[1-9]",),
)


def turns(*spec) -> tuple[Turn, ...]:
    out = []
    for role, text, *calls in spec:
        out.append(
            Turn(
                len(out),
                role,
                text,
                tuple(calls[0]) if calls else (),
                tool_call_id=f"c{len(out) - 1}" if role == "tool" else None,
            )
        )
    return tuple(out)


def test_without_profile_settings_the_turns_are_the_same_object():
    plain = turns(("system", "s"), ("user", "Tool call error: No tool calls found"))
    assert harness_view(plain, TraceSettings()) is plain


def test_a_nudge_does_not_start_a_new_run():
    call = ToolCall("c2", "bash", json.dumps({"command": "cat a.txt"}))
    conv = turns(
        ("system", "s"),
        ("user", "fix it"),
        ("assistant", "", [call]),
        ("tool", "x"),
        ("assistant", "I am done."),
        ("user", "Tool call error: No tool calls found in your response."),
        ("assistant", "", [ToolCall("c6", "bash", call.arguments)]),
        ("tool", "x"),
    )
    fixed = [
        Turn(t.index, t.role, t.text, t.tool_calls, tool_call_id=("c2" if t.index == 3 else "c6"))
        if t.role == "tool"
        else t
        for t in conv
    ]
    trace = build_trace(Conversation(tuple(fixed)), NUDGING)
    assert trace.run_start == 2 and [e.step for e in trace.events] == [1, 2]
    assert trace.turns[5].role == HARNESS
    assert build_trace(Conversation(tuple(fixed)), TraceSettings()).run_start == 6  # generic: a new run


def test_text_actions_are_read_as_calls_and_their_results():
    reply = "THOUGHT: look at the file\n\n```bash\ncat a.txt\n```"
    conv = turns(
        ("system", "s"),
        ("user", "task: fix a.txt"),
        ("assistant", reply),
        ("user", "<returncode>1</returncode>\n<output>\ncat: a.txt: No such file\n</output>"),
        ("assistant", "two blocks\n```bash\nls\n```\n```bash\npwd\n```"),
        ("user", "Please always provide EXACTLY ONE action in triple backticks."),
        ("assistant", reply),
        ("user", "<returncode>1</returncode>\n<output>\ncat: a.txt: No such file\n</output>"),
    )
    trace = build_trace(Conversation(conv), TEXT)
    assert trace.run_start == 2
    assert [(e.tool, json.loads(e.raw_args)["command"], e.status) for e in trace.events] == [
        (TEXT_TOOL, "cat a.txt", Status.ERROR),
        (TEXT_TOOL, "cat a.txt", Status.ERROR),
    ]
    assert trace.events[0].result_hash == trace.events[1].result_hash
    assert trace.turns[4].tool_calls == ()  # two blocks: no action (its harness refuses it too)
    assert trace.turns[1].role == "user"  # the task itself stays the user's


def test_an_unanswered_text_action_is_the_latest_call_without_a_result():
    conv = turns(("system", "s"), ("user", "task"), ("assistant", "```bash\nls\n```"))
    trace = build_trace(Conversation(conv), TEXT)
    assert len(trace.events) == 1 and trace.events[0].status is Status.MISSING


@pytest.mark.parametrize(
    ("reply", "command"),
    [
        ("```bash\ncat a.txt\n```", "cat a.txt"),
        ("THOUGHT: look\n```mswea_bash_command\ncat a.txt\n```", "cat a.txt"),  # mini-SWE-agent 2.x
        ("```\nls -la\n```", "ls -la"),
        ("```sh\nmake\n```", "make"),
        ("```python\nprint(1)\n```", None),  # code shown, not run
        ("no block at all", None),
    ],
)
def test_which_fenced_blocks_are_actions(reply, command):
    conv = turns(("system", "s"), ("user", "task"), ("assistant", reply))
    events = build_trace(Conversation(conv), TEXT).events
    assert [json.loads(e.raw_args)["command"] for e in events] == ([command] if command else [])


AIDER = TraceSettings(
    text_actions="search_replace",
    nudge_patterns=(r"\AI updated the files\.\Z",),
    failure_patterns=(r"(?m:^## SearchReplaceNoExactMatch: )",),
)
EDIT = (
    "Here is the change.\n\nhello.py\n```python\n<<<<<<< SEARCH\nprint('goodbye')\n=======\n"
    "print('hi')\n>>>>>>> REPLACE\n```\n"
)
REFUSED = "# 1 SEARCH/REPLACE block failed to match!\n\n## SearchReplaceNoExactMatch: This SEARCH block failed"


def test_search_replace_blocks_are_edits_of_the_file_named_before_them():
    two = EDIT + "\nb.py\n```\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n```"
    conv = turns(
        ("system", "s"),
        ("user", "change it"),
        ("assistant", two),
        ("user", "I updated the files."),
        ("assistant", "Ok."),
        ("user", "now again"),
        ("assistant", EDIT),
        ("user", REFUSED),
        ("assistant", EDIT),
        ("user", REFUSED),
    )
    trace = build_trace(Conversation(conv), AIDER)
    assert [(json.loads(e.raw_args)["path"], e.status) for e in trace.events] == [
        ("hello.py", Status.ERROR),
        ("hello.py", Status.ERROR),
    ]  # the run since "now again"
    assert trace.events[0].args_hash == trace.events[1].args_hash
    every = build_trace(Conversation(conv), AIDER.model_copy(update={"scope": "conversation"}))
    assert [json.loads(e.raw_args)["path"] for e in every.events][:2] == ["hello.py", "b.py"]
    assert every.events[0].status is Status.OK  # "I updated the files." answered the first two


CLINE = derive(TraceSettings(), next(p for p in shipped_profiles() if p.name == "cline"))
READ = "<thinking>The file first.</thinking>\n<read_file>\n<path>src/a.py</path>\n</read_file>"
MISSING = (
    "[read_file for 'src/a.py'] Result:\nThe tool execution failed with the following error:\n"
    "<error>\nError reading file: File not found: src/a.py\n</error>"
)


def after(result: str, minute: int) -> str:
    """A result message as Cline writes it: the result, its reminder, its environment details."""
    return (
        f"{result}\n\n# task_progress RECOMMENDED\n\nInclude a todo list ({minute} requests so far).\n\n"
        f"<environment_details>\n# Current Time\n12/5/2026, 11:{minute:02d}:01 PM (UTC)\n</environment_details>"
    )


def test_xml_tool_tags_are_calls_and_the_result_message_is_their_result():
    conv = turns(
        ("system", "You are Cline"),
        ("user", "<task>fix a.py</task>"),
        ("assistant", READ),
        ("user", after(MISSING, 1)),
        ("assistant", READ),
        ("user", after(MISSING, 2)),
    )
    trace = build_trace(Conversation(conv), CLINE)
    assert [(e.tool, json.loads(e.raw_args), e.status) for e in trace.events] == [
        ("read_file", {"path": "src/a.py"}, Status.ERROR)
    ] * 2
    assert trace.events[0].result_hash == trace.events[1].result_hash  # its reminders are no part of it
    assert trace.run_start == 2  # the result messages are no user turn
    assert [e.target for e in trace.events] == ["read src/a.py"] * 2


def test_a_tag_the_profile_does_not_know_is_prose():
    conv = turns(("system", "s"), ("user", "task"), ("assistant", "<thinking>\n<path>a.py</path>\n</thinking>"))
    assert build_trace(Conversation(conv), CLINE).events == ()


def test_a_native_calls_result_written_as_a_user_message_is_its_result():
    """Cline before 3.0 with native tools: the tool message says "result missing", the result
    follows as the harness's user message."""
    command = ToolCall("c2", "execute_command", json.dumps({"command": "cat a.txt", "requires_approval": "false"}))
    failed = "[execute_command for 'cat a.txt'] Result:\nCommand failed with exit code 1.\nOutput:\ncat: a.txt: missing"
    conv = (
        Turn(0, "system", "You are Cline"),
        Turn(1, "user", "<task>fix</task>"),
        Turn(2, "assistant", "", (command,)),
        Turn(3, "tool", "result missing", tool_call_id="c2"),
        Turn(4, "user", after(failed, 3)),
    )
    trace = build_trace(Conversation(conv), CLINE)
    assert [(e.result, e.status) for e in trace.events] == [(failed.split("\n", 1)[1], Status.ERROR)]
    assert trace.turns[-1].role == HARNESS and trace.run_start == 2


ROO = derive(TraceSettings(), next(p for p in shipped_profiles() if p.name == "roo_code"))


def test_roo_codes_nested_tags_name_the_file_it_reads():
    read = "<read_file>\n<args>\n  <file>\n    <path>src/a.ts</path>\n  </file>\n</args>\n</read_file>"
    result = "[read_file for 'src/a.ts'. Reading several files at once is faster.] Result:\n<error>no such file</error>"
    conv = turns(
        ("system", "You are Roo, a highly skilled software engineer"),
        ("user", "<task>fix</task>"),
        ("assistant", read),
        ("user", result + "\n\n<environment_details>\n# Current Time\n1 PM\n</environment_details>"),
    )
    (event,) = build_trace(Conversation(conv), ROO).events
    assert json.loads(event.raw_args) == {"args": {"file": {"path": "src/a.ts"}}}
    assert event.target == "read src/a.ts" and event.result == "<error>no such file</error>"
