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


def rounds_of(script: Sequence[Any]) -> list[list[tuple[str, Any, str]]]:
    """The script's calls by round: a list in the script is one round of parallel calls."""
    return [list(item) if isinstance(item, list) else [item] for item in script if not isinstance(item, str)]


def model(script: Sequence[Any]) -> Callable[[dict], Reply]:
    """A chat-completions responder that plays the script's rounds in order (a round's calls in
    one reply), then answers DONE. Arguments that are text are sent as they are."""
    rounds = rounds_of(script)

    def respond(request: dict) -> Reply:
        seen = sum(1 for m in request["messages"] if m.get("role") == "tool")
        done = 0
        for calls in rounds:
            if seen < done + len(calls):
                return Reply(tool_calls=[(tool, _text(args)) for tool, args, _ in calls])
            done += len(calls)
        return Reply(content=DONE)

    return respond


def _text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args)


def tools(script: Sequence[Any]) -> dict[str, Callable[[dict], str]]:
    """Each tool answers what the script's calls with those arguments got, in order (the last
    one again once they run out)."""
    answers: dict[tuple[str, str], list[str]] = {}
    for tool, args, result in steps_of(script):
        answers.setdefault((tool, _key(args)), []).append(result)
    names = {tool for tool, _ in answers}
    return {name: _answering(name, answers) for name in names}


def _answering(name: str, answers: dict[tuple[str, str], list[str]]) -> Callable[[dict], str]:
    def answer(args: Any) -> str:
        queue = answers[(name, _key(args))]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return answer


def _key(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True)
