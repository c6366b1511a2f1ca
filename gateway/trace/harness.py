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
  harness's next message, applied or refused (``search_replace``); each tool written as XML tags
  (``<read_file>\n<path>a.py</path>\n</read_file>``: Cline before native tools, Roo Code)
  becomes a call of that tool with its tags as arguments (``xml_tags``). The harness's answer to
  an action is its result even when it reads like a nudge.
- results written as a user message (``TraceSettings.text_result_patterns``): Cline writes each
  result as "[read_file for 'a.py'] Result:" text, after the XML action and after a native call
  alike (whose own result then only says "result missing"). Such a message is the result of the
  calls before it, one section each; the text after a section (the harness's reminders, its
  environment details) is left out where the pattern's ``result`` group stops.

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
        answering = turn.role == "user" and (answers is None or bool(answers.search(turn.text, 0, _NUDGE_SCAN)))
        if answering and pending:
            # The harness's answer to the actions: every user message (the command's output), or
            # only those the profile names (Aider's refusal; its other messages are the user's).
            texts = _sections(turn.text, answers, len(pending))
            out += [Turn(turn.index, "tool", t, tool_call_id=c.id, name=c.name) for c, t in zip(pending, texts)]
            pending, changed = (), True
            continue
        if answering and answers is not None and out and out[-1].role == "tool":
            _answer_calls(out, turn, answers)  # native calls whose results it carries
            out.append(Turn(turn.index, HARNESS, turn.text))
            changed = True
            continue
        new = turn
        if turn.role == "user" and nudge_re is not None and nudge_re.search(turn.text, 0, _NUDGE_SCAN):
            new = Turn(turn.index, HARNESS, turn.text)
        elif read is not None and turn.role == "assistant" and not turn.tool_calls:
            calls = read(turn, settings)
            new = Turn(turn.index, "assistant", turn.text, calls) if calls else turn
        if new.tool_calls and new is not turn:
            pending = new.tool_calls
        elif new.role == "user":
            pending = ()  # the user's own words: the actions before them stay unanswered
        changed = changed or new is not turn
        out.append(new)
    return tuple(out) if changed else turns


def _sections(text: str, answers: re.Pattern[str] | None, calls: int) -> list[str]:
    """The results one harness message holds for ``calls`` calls, in order: each match of the
    profile's pattern (its ``result`` group where it has one); the whole text for any call beyond
    them (a command's output, with no pattern at all)."""
    found: list[str] = []
    if answers is not None:
        grouped = "result" in answers.groupindex
        for match in answers.finditer(text):
            found.append(match["result"] if grouped and match["result"] is not None else text)
    return (found + [text] * calls)[:calls]


def _answer_calls(out: list[Turn], turn: Turn, answers: re.Pattern[str]) -> None:
    """The tool turns ending ``out`` (native calls whose own results say nothing) take their
    results from the harness's message ``turn``, in order."""
    start = len(out)
    while start > 0 and out[start - 1].role == "tool":
        start -= 1
    texts = _sections(turn.text, answers, len(out) - start)
    for k, text in enumerate(texts):
        old = out[start + k]
        out[start + k] = Turn(
            old.index, "tool", text, tool_call_id=old.tool_call_id, name=old.name, is_error=old.is_error
        )


def _xml_tags(turn: Turn, settings: TraceSettings) -> tuple[ToolCall, ...]:
    """Each tool the profile knows written as XML tags in the reply, as a call whose arguments
    are its inner tags (``<path>a.py</path>``: ``{"path": "a.py"}``)."""
    tools = settings.xml_call_re
    if tools is None:
        return ()
    calls = []
    for k, found in enumerate(tools.finditer(turn.text)):
        arguments = _tags(found[2])
        calls.append(ToolCall(f"text-{turn.index}-{k}", found[1], orjson.dumps(arguments).decode()))
    return tuple(calls)


def _tags(text: str, depth: int = 0) -> dict[str, object]:
    """The tags in ``text`` as arguments: a tag holding nothing but tags is an object (Roo Code's
    ``<args><file><path>a.py</path></file></args>``; a file's content with tags in it stays
    text), a tag given twice a list; a tag's text loses the line breaks that set it apart from
    its tags."""
    out: dict[str, object] = {}
    for name, inner in _XML_PARAM.findall(text):
        value: object = inner.strip("\n")
        bare = inner.strip()
        if depth < _XML_DEPTH and bare.startswith("<") and bare.endswith(">") and _XML_PARAM.search(inner):
            value = _tags(inner, depth + 1)
        if name in out:
            previous = out[name]
            out[name] = [*previous, value] if isinstance(previous, list) else [previous, value]
        else:
            out[name] = value
    return out


def _bash_block(turn: Turn, settings: TraceSettings) -> tuple[ToolCall, ...]:
    """The reply's single shell block as a call; none when it has none or several (the harness
    refuses those, and says so in a nudge)."""
    blocks = _BLOCK.findall(turn.text)
    if len(blocks) != 1:
        return ()
    arguments = orjson.dumps({"command": blocks[0].strip()}).decode()
    return (ToolCall(f"text-{turn.index}", TEXT_TOOL, arguments),)


def _search_replace(turn: Turn, settings: TraceSettings) -> tuple[ToolCall, ...]:
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
_XML_PARAM = re.compile(r"<([A-Za-z_][\w-]*)>(.*?)</\1>", re.DOTALL)
_XML_DEPTH = 3  # tags inside tags read as objects this deep; deeper is text
_READERS = {"bash_block": _bash_block, "search_replace": _search_replace, "xml_tags": _xml_tags}
