"""A scripted run (support.varying) as a real model and real tools: the model proposes the script's
next call each time it is asked (counting the tool results it has seen, a veto's observation
included), the tools answer what the script says for those arguments."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from support.upstream import Reply

DONE = "All done."


def steps_of(script: Sequence[Any]) -> list[tuple[str, dict, str]]:
    return [s for item in script if not isinstance(item, str) for s in (item if isinstance(item, list) else [item])]


def prompt_of(script: Sequence[Any]) -> str:
    return next(s for s in script if isinstance(s, str))


def model(script: Sequence[Any]) -> Callable[[dict], Reply]:
    """A chat-completions responder that plays the script's calls in order, then answers DONE."""
    steps = steps_of(script)

    def respond(request: dict) -> Reply:
        seen = sum(1 for m in request["messages"] if m.get("role") == "tool")
        if seen >= len(steps):
            return Reply(content=DONE)
        tool, args, _ = steps[seen]
        return Reply(tool_calls=[(tool, json.dumps(args))])

    return respond


def tools(script: Sequence[Any]) -> dict[str, Callable[[dict], str]]:
    """Each tool answers what the script's calls with those arguments got, in order (the last
    one again once they run out)."""
    answers: dict[tuple[str, str], list[str]] = {}
    for tool, args, result in steps_of(script):
        answers.setdefault((tool, json.dumps(args, sort_keys=True)), []).append(result)
    names = {tool for tool, _ in answers}
    return {name: _answering(name, answers) for name in names}


def _answering(name: str, answers: dict[tuple[str, str], list[str]]) -> Callable[[dict], str]:
    def answer(args: dict) -> str:
        queue = answers[(name, json.dumps(args, sort_keys=True))]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return answer
