"""The conversation as the agent's harness means it, for agents whose profile says how.

Two things a harness writes look like something else:

- its own nudges, sent as user messages ("Tool call error: No tool calls found ..." after a reply
  without a tool call): not a genuine user turn, so they never restart a run's counts
  (``TraceSettings.nudge_patterns``); they become ``harness`` turns, which pair with nothing;
- actions written in text (``TraceSettings.text_actions``): an agent that answers with one
  ```bash block per reply and gets the command's output in the next user message acts exactly
  like a tool call and its result, so that is how the trace reads them: the block becomes a call
  of a ``bash`` tool whose result is that user message (``bash_block``); each SEARCH/REPLACE
  block becomes a call of an ``edit`` tool on the file named before it, answered by the
  harness's next message, applied or refused (``search_replace``). The harness's answer to an
  action is its result even when it reads like a nudge.

Turns left as they are stay the same objects, so the builder's incremental memo (which knows a
conversation by the identity of its turns) still recognises a conversation that only grew.
"""

from __future__ import annotations

import re

import orjson

from gateway.trace.model import ToolCall, Turn
from gateway.trace.settings import TraceSettings

TEXT_TOOL = "bash"  # the tool a shell block is read as
EDIT_TOOL = "edit"  # the tool a SEARCH/REPLACE block is read as
HARNESS = "harness"  # the role of a nudge: neither the user's words nor a tool's result
# A fenced block whose info string is empty or names a shell (```bash, ```sh, mini-SWE-agent's
# ```mswea_bash_command): other fences (```python, ```diff) are code shown, not run.
_BLOCK = re.compile(r"```(?:[\w.-]*(?:bash|sh|shell)[\w.-]*)?[ \t]*\n(.*?)```", re.DOTALL)
_NUDGE_SCAN = 2048  # a nudge says what it is at its start


def harness_view(turns: tuple[Turn, ...], settings: TraceSettings) -> tuple[Turn, ...]:
    """``turns`` with nudges marked and text actions read as calls; ``turns`` itself when the
    settings name neither or nothing matched."""
    nudge_re = settings.nudge_re
    read = _READERS.get(settings.text_actions)
    if nudge_re is None and read is None:
        return turns
    out: list[Turn] = []
    pending: tuple[ToolCall, ...] = ()  # the text actions waiting for their result
    changed = False
    answers = settings.text_result_re
    for turn in turns:
        if turn.role == "user" and pending and (answers is None or answers.search(turn.text, 0, _NUDGE_SCAN)):
            # The harness's answer to the actions: every user message (the command's output), or
            # only those the profile names (Aider's refusal; its other messages are the user's).
            out += [Turn(turn.index, "tool", turn.text, tool_call_id=c.id, name=c.name) for c in pending]
            pending, changed = (), True
            continue
        new = turn
        if turn.role == "user" and nudge_re is not None and nudge_re.search(turn.text, 0, _NUDGE_SCAN):
            new = Turn(turn.index, HARNESS, turn.text)
        elif read is not None and turn.role == "assistant" and not turn.tool_calls:
            calls = read(turn)
            new = Turn(turn.index, "assistant", turn.text, calls) if calls else turn
        if new.tool_calls and new is not turn:
            pending = new.tool_calls
        elif new.role == "user":
            pending = ()  # the user's own words: the actions before them stay unanswered
        changed = changed or new is not turn
        out.append(new)
    return tuple(out) if changed else turns


def _bash_block(turn: Turn) -> tuple[ToolCall, ...]:
    """The reply's single shell block as a call; none when it has none or several (the harness
    refuses those, and says so in a nudge)."""
    blocks = _BLOCK.findall(turn.text)
    if len(blocks) != 1:
        return ()
    arguments = orjson.dumps({"command": blocks[0].strip()}).decode()
    return (ToolCall(f"text-{turn.index}", TEXT_TOOL, arguments),)


def _search_replace(turn: Turn) -> tuple[ToolCall, ...]:
    """Each SEARCH/REPLACE block of the reply as an edit of the file named on the line before it
    (Aider's edit format); the harness's next user message (applied, or the refusal) answers them."""
    calls = []
    for k, found in enumerate(_EDIT.finditer(turn.text)):
        arguments = orjson.dumps(
            {"path": _path_before(turn.text, found.start()), "search": found["search"], "replace": found["replace"]}
        ).decode()
        calls.append(ToolCall(f"text-{turn.index}-{k}", EDIT_TOOL, arguments))
    return tuple(calls)


def _path_before(text: str, at: int) -> str:
    """The nearest line before ``at`` that is neither empty nor a fence: the edited file."""
    for line in reversed(text[:at].splitlines()[-3:]):
        stripped = line.strip()
        if stripped and not stripped.startswith("```"):
            return stripped
    return ""


_EDIT = re.compile(
    r"^<{5,9} SEARCH[^\n]*\n(?P<search>.*?)^={5,9}[ \t]*\n(?P<replace>.*?)^>{5,9} REPLACE", re.DOTALL | re.MULTILINE
)
_READERS = {"bash_block": _bash_block, "search_replace": _search_replace}
