"""A minimal tool-executing agent loop, as frameworks run it, over the official openai SDK.

Its tools count their executions so tests can prove a vetoed call was never run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import openai

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
    for name in ("read_file", "list_dir", "run_tests")
]


@dataclass
class Agent:
    client: openai.OpenAI
    tools: dict[str, Callable[[dict], str]] = field(default_factory=dict)
    executions: Counter = field(default_factory=Counter)
    stream: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    messages: list[dict] = field(default_factory=list)
    finish_reasons: list[str] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)  # x-loopguard-action of each response
    specs: list[dict] | None = None  # the tools declared to the model; None: TOOLS
    model: str = "test-model"

    def run(self, prompt: str, max_steps: int = 12) -> str | None:
        """Run until the model answers without tool calls (returns its text) or max_steps."""
        self.messages.append({"role": "user", "content": prompt})
        for _ in range(max_steps):
            message, reason = self._step()
            self.finish_reasons.append(reason)
            self.messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                return message.get("content")
            for call in calls:
                name = call["function"]["name"]
                self.executions[name] += 1
                result = self.tools.get(name, lambda args: "ok")(_arguments(call["function"]["arguments"]))
                self.messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        return None

    def _step(self) -> tuple[dict, str]:
        kwargs = dict(model=self.model, messages=self.messages, tools=self.specs or TOOLS, extra_headers=self.headers)
        if not self.stream:
            raw = self.client.chat.completions.with_raw_response.create(**kwargs)
            self.actions.append(raw.headers.get("x-loopguard-action", ""))
            completion = raw.parse()
            choice = completion.choices[0]
            return choice.message.model_dump(exclude_none=True), choice.finish_reason
        with self.client.chat.completions.stream(**kwargs) as stream:
            for _ in stream:
                pass
            completion = stream.get_final_completion()
        choice = completion.choices[0]
        message = choice.message.model_dump(exclude_none=True, exclude={"parsed"})
        for call in message.get("tool_calls") or []:
            call.pop("parsed_arguments", None)
            call["function"].pop("parsed_arguments", None)
        return message, choice.finish_reason


def _arguments(text: str | None) -> object:
    """A call's arguments as the tool takes them: JSON, or the text itself (a freeform patch)."""
    try:
        return json.loads(text or "{}")
    except json.JSONDecodeError:
        return text


def declare(*names: str) -> list[dict]:
    """Tool declarations (a free-form object argument) for ``Agent.specs``."""
    return [
        {"type": "function", "function": {"name": name, "description": name, "parameters": {"type": "object"}}}
        for name in names
    ]
