"""A minimal tool-executing agent loop over the official anthropic SDK, as Claude-style agents run
it: the assistant turn is appended as returned, each tool_use answered by a tool_result."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import anthropic

TOOLS = [
    {"name": name, "description": name, "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    for name in ("read_file", "list_dir", "run_tests")
]


@dataclass
class ClaudeAgent:
    client: anthropic.Anthropic
    stream: bool = False
    executions: Counter = field(default_factory=Counter)
    messages: list[dict] = field(default_factory=list)
    stop_reasons: list[str | None] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)  # x-loopguard-action of each response
    tools: list[dict] = field(default_factory=lambda: TOOLS)  # declared to the model
    results: dict[str, str] = field(default_factory=dict)  # tool name -> its result text
    options: dict = field(default_factory=dict)  # more request fields (thinking, system, ...)

    def run(self, prompt: str, max_steps: int = 12) -> str | None:
        """Run until the model answers without tool_use (returns its text) or max_steps."""
        self.messages.append({"role": "user", "content": prompt})
        for _ in range(max_steps):
            message = self._step()
            self.stop_reasons.append(message.stop_reason)
            self.messages.append(
                {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]}
            )
            uses = [b for b in message.content if b.type == "tool_use"]
            if not uses:
                return "\n".join(b.text for b in message.content if b.type == "text")
            results = []
            for use in uses:
                self.executions[use.name] += 1
                text = self.results.get(use.name, f"contents of {use.input}")
                results.append({"type": "tool_result", "tool_use_id": use.id, "content": text})
            self.messages.append({"role": "user", "content": results})
        return None

    def _step(self) -> anthropic.types.Message:
        kwargs = {
            "model": "claude-sonnet-4-6",
            "max_tokens": 1024,
            "messages": self.messages,
            "tools": self.tools,
            **self.options,
        }
        if not self.stream:
            raw = self.client.messages.with_raw_response.create(**kwargs)
            self.actions.append(raw.headers.get("x-loopguard-action", ""))
            return raw.parse()
        with self.client.messages.stream(**kwargs) as streamed:
            self.actions.append(streamed.response.headers.get("x-loopguard-action", ""))
            return streamed.get_final_message()
