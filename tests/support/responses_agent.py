"""A minimal tool-executing agent loop over ``client.responses``, as Responses-API agents run it.

``chain``: each request carries only the new items and names the previous response
(``previous_response_id``); otherwise the whole history is sent with ``store: false``.
``mode``: ``unary``, ``stream`` (``responses.create(stream=True)``, the final response taken from
``response.completed``) or ``helper`` (``responses.stream()``, which rebuilds the response from the
events and fails on any inconsistency). Tools count their executions.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import openai

TOOLS = [
    {
        "type": "function",
        "name": name,
        "description": name,
        "strict": False,
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("read_file", "list_dir")
]


@dataclass
class ResponsesAgent:
    client: openai.OpenAI
    tools: dict[str, Callable[[dict], str]] = field(default_factory=dict)
    mode: str = "unary"
    chain: bool = False
    conversation: str | None = None  # Conversations API: each request sends only new items
    executions: Counter = field(default_factory=Counter)
    history: list[Any] = field(default_factory=list)
    responses: list[Any] = field(default_factory=list)  # every Response the agent received
    events: list[list[Any]] = field(default_factory=list)  # streamed: each response's events
    specs: list[dict] | None = None  # the tools declared to the model; None: TOOLS

    def run(self, prompt: str, max_steps: int = 12) -> str | None:
        pending: list[Any] = [{"role": "user", "content": prompt}]
        for _ in range(max_steps):
            response = self._create(pending)
            self.responses.append(response)
            calls = [item for item in response.output if item.type == "function_call"]
            if not self.chain and self.conversation is None:
                self.history += [item.model_dump(exclude_none=True) for item in response.output]
            if not calls:
                return response.output_text
            pending = []
            for call in calls:
                self.executions[call.name] += 1
                result = self.tools.get(call.name, lambda args: "ok")(json.loads(call.arguments or "{}"))
                pending.append({"type": "function_call_output", "call_id": call.call_id, "output": result})
        return None

    def _create(self, pending: list[Any]) -> Any:
        kwargs: dict[str, Any] = {"model": "gpt-4.1", "tools": self.specs or TOOLS, "instructions": "Use the tools."}
        if self.conversation is not None:
            kwargs.update(input=pending, conversation=self.conversation)
        elif self.chain:
            kwargs["input"] = pending
            if self.responses:
                kwargs["previous_response_id"] = self.responses[-1].id
        else:
            self.history += pending
            kwargs.update(input=self.history, store=False)
        if self.mode == "unary":
            return self.client.responses.create(**kwargs)
        if self.mode == "helper":
            with self.client.responses.stream(**kwargs) as stream:
                self.events.append(list(stream))
                return stream.get_final_response()
        events = list(self.client.responses.create(stream=True, **kwargs))
        self.events.append(events)
        closing = [e for e in events if e.type == "response.completed"]
        assert len(closing) == 1 and events[-1] is closing[0], [e.type for e in events]
        return closing[0].response
