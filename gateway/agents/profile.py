"""One agent profile, validated strictly: unknown keys and bad regexes are errors with their key
path, like a policy's."""

from __future__ import annotations

import json
import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from gateway.trace.model import ToolCall
from gateway.trace.settings import Regex, ToolRole


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Recognize(_Model):
    """Any one rule that matches recognises the agent; an empty rule matches nothing.

    ``tools`` are the names that mark the agent across its versions; a request declaring at
    least ``share`` of them (and at least two, or the one there is) is the agent's. Versions add,
    rename and drop tools: an overlap still names them where an exact set would not."""

    tools: tuple[str, ...] = ()
    share: float = Field(0.5, gt=0, le=1)
    system: tuple[str, ...] = ()  # any of these substrings is in the system prompt
    user_agent: tuple[str, ...] = ()  # any of these substrings is in the User-Agent header

    def declared(self, declared: frozenset[str] | None) -> int:
        """How many of ``tools`` the request declares when that is enough to match, else 0."""
        if not self.tools or declared is None:
            return 0
        found = len(declared.intersection(self.tools))
        needed = max(min(2, len(self.tools)), math.ceil(self.share * len(self.tools) - 1e-9))
        return found if found >= needed else 0

    def named(self, system: str, user_agent: str) -> bool:
        """The system prompt or the User-Agent names the agent."""
        return any(m in system for m in self.system) or any(m in user_agent for m in self.user_agent)


class Results(_Model):
    """The agent's result envelope: what its harness writes around a tool's own output."""

    volatile: tuple[Regex, ...] = ()  # harness lines that change on every call (ids, pids, times): removed
    not_errors: tuple[Regex, ...] = ()  # harness text that is no failure ("Error: (none)")
    errors: tuple[Regex, ...] = ()  # its own failure texts, matched ignoring case
    refusals: tuple[Regex, ...] = ()  # its editors' refusals, matched as written
    empty: tuple[Regex, ...] = ()  # "nothing found / nothing more": compared as an empty result


class Ending(_Model):
    """How this client takes the end of a run when the policy ends runs with an error (terminate
    ``mode: error``): ``answer`` where it retries every error (answer mode instead: the model's
    own tools-closed reply), or the status it treats as final. Unset: the policy's status."""

    error: Literal["answer"] | Annotated[int, Field(ge=400, le=499)] | None = None


class Finish(_Model):
    """The action this agent ends its run with (mini-SWE-agent runs a command that echoes its
    marker, OpenHands calls ``finish``): a run the gateway ends with the model's own answer ends
    with this call carrying it, so the agent submits the answer instead of refusing a reply
    without an action. ``{answer}`` in an argument is the answer's text."""

    tool: str = Field(min_length=1)
    arguments: dict[str, str] = Field(default_factory=dict)

    def call(self, answer: str, call_id: str) -> ToolCall:
        arguments = {k: v.replace(ANSWER, answer) for k, v in self.arguments.items()}
        return ToolCall(call_id, self.tool, json.dumps(arguments))


ANSWER = "{answer}"


class AgentProfile(_Model):
    name: str = Field(pattern=r"^[a-z0-9_]+$")
    description: str = ""
    recognize: Recognize = Recognize()
    tools: dict[str, ToolRole] = Field(default_factory=dict)
    results: Results = Results()
    nudges: tuple[Regex, ...] = ()  # user messages its harness writes itself
    text_actions: Literal["none", "bash_block", "search_replace", "xml_tags"] = "none"
    text_results: tuple[Regex, ...] = ()  # the user messages that answer text actions (default: any)
    terminate: Ending = Ending()
    finish: Finish | None = None  # the action its runs end with, where they end by an action

    def matches(self, declared: frozenset[str] | None, system: str, user_agent: str) -> bool:
        rule = self.recognize
        return rule.declared(declared) > 0 or rule.named(system, user_agent)


def multiline(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """Profile patterns are written line by line (``^...$``); trace settings' volatile and
    failure patterns compile without MULTILINE, so each carries its own flag."""
    return tuple(f"(?m:{p})" for p in patterns)
