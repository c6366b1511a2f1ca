"""The conversation as the agent's harness means it, for agents whose profile says how.

Two things a harness writes look like something else:

- its own nudges, sent as user messages ("Tool call error: No tool calls found ..." after a reply
  without a tool call): not a genuine user turn, so they never restart a run's counts
  (``TraceSettings.nudge_patterns``); they become ``harness`` turns, which pair with nothing;
- actions written in text (``TraceSettings.text_actions``): an agent that answers with one
  ```bash block per reply and gets the command's output in the next user message acts exactly
  like a tool call and its result, so that is how the trace reads them: the block becomes a call
  of a ``bash`` tool whose result is that user message.

Turns left as they are stay the same objects, so the builder's incremental memo (which knows a
conversation by the identity of its turns) still recognises a conversation that only grew.
"""

from __future__ import annotations

import re

import orjson

from gateway.trace.model import ToolCall, Turn
from gateway.trace.settings import TraceSettings

TEXT_TOOL = "bash"  # the tool a text action is read as
HARNESS = "harness"  # the role of a nudge: neither the user's words nor a tool's result
# A fenced block whose info string is empty or names a shell (```bash, ```sh, mini-SWE-agent's
# ```mswea_bash_command): other fences (```python, ```diff) are code shown, not run.
_BLOCK = re.compile(r"```(?:[\w.-]*(?:bash|sh|shell)[\w.-]*)?[ \t]*\n(.*?)```", re.DOTALL)
_NUDGE_SCAN = 2048  # a nudge says what it is at its start


def harness_view(turns: tuple[Turn, ...], settings: TraceSettings) -> tuple[Turn, ...]:
    """``turns`` with nudges marked and text actions read as calls; ``turns`` itself when the
    settings name neither or nothing matched."""
    nudge_re = settings.nudge_re
    text = settings.text_actions == "bash_block"
    if nudge_re is None and not text:
        return turns
    out: list[Turn] = []
    pending: str | None = None  # the id of the text action waiting for its result
    changed = False
    for turn in turns:
        new = turn
        if turn.role == "user" and nudge_re is not None and nudge_re.search(turn.text, 0, _NUDGE_SCAN):
            new = Turn(turn.index, HARNESS, turn.text)
        elif turn.role == "user" and pending is not None:
            new = Turn(turn.index, "tool", turn.text, tool_call_id=pending, name=TEXT_TOOL)
        elif text and turn.role == "assistant" and not turn.tool_calls:
            new = _with_text_action(turn)
        pending = new.tool_calls[0].id if new is not turn and new.role == "assistant" else None
        changed = changed or new is not turn
        out.append(new)
    return tuple(out) if changed else turns


def _with_text_action(turn: Turn) -> Turn:
    """The assistant turn with its single ```bash block as a call; unchanged when it has none
    or several (the harness refuses those, and says so in a nudge)."""
    blocks = _BLOCK.findall(turn.text)
    if len(blocks) != 1:
        return turn
    arguments = orjson.dumps({"command": blocks[0].strip()}).decode()
    return Turn(turn.index, "assistant", turn.text, (ToolCall(f"text-{turn.index}", TEXT_TOOL, arguments),))
