"""What the judge is asked (the run's task and latest calls, each cut short) and how its answer
is read (a JSON object; anything else is a failed check, never a verdict)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway.detectors.judge import LlmJudgeSettings
from gateway.protocols.chat import asking
from gateway.trace.model import ToolEvent, Trace
from gateway.wire import codec

SYSTEM = (
    "You review the recent steps of an AI agent that uses tools, and decide whether it is stuck "
    "in an unproductive loop: repeating the same action or the same idea in other words, "
    "retrying something that keeps failing the same way, or going in circles without getting "
    "closer to its task. Steady progress, exploring different things, and waiting for a job "
    "whose output changes are not loops. Answer with one JSON object and nothing else: "
    '{"looping": true or false, "confidence": a number from 0 to 1, '
    '"reason": "one short sentence: what repeats, or why it is progress"}'
)

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True, slots=True)
class Answer:
    looping: bool
    confidence: float
    reason: str


def request_body(trace: Trace, settings: LlmJudgeSettings, model: str) -> bytes:
    return asking.question(model, SYSTEM, transcript(trace, settings), settings.max_tokens)


def transcript(trace: Trace, settings: LlmJudgeSettings) -> str:
    task = next((t.text for t in reversed(trace.turns[: trace.run_start]) if t.role == "user" and t.text), "")
    events = trace.events[-settings.max_calls :]
    earlier = trace.total_events - len(events)
    lines = [f"The agent's task: {_cut(task, settings.max_chars)}", ""]
    if earlier:
        lines.append(f"({earlier} earlier calls not shown)")
    lines += [_line(n, e, settings.max_chars) for n, e in enumerate(events, start=earlier + 1)]
    lines += ["", "Is the agent stuck in a loop?"]
    return "\n".join(lines)


def _line(n: int, event: ToolEvent, limit: int) -> str:
    if event.vetoed:
        outcome = "refused by the gateway (a loop guard)"
    elif event.result is None:
        outcome = "no result"
    else:
        outcome = f"{event.status.value}: {_cut(event.result, limit)}"
    return f"{n}. {event.tool}({_cut(event.raw_args, limit)}) -> {outcome}"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def read_answer(body: bytes) -> tuple[Answer | None, int, int]:
    """(the verdict or None when the reply holds none, prompt tokens, completion tokens)."""
    text, prompt, completion = asking.reply(body)  # the judge speaks chat completions
    return (_verdict(text) if text is not None else None), prompt, completion


def _verdict(content: Any) -> Answer | None:
    found = _OBJECT.search(content) if isinstance(content, str) else None
    if found is None:
        return None
    try:
        value = codec.loads(found.group(0))
    except codec.DecodeError:
        return None
    looping, confidence = value.get("looping") if isinstance(value, dict) else None, None
    if isinstance(value, dict) and isinstance(value.get("confidence"), int | float):
        confidence = min(1.0, max(0.0, float(value["confidence"])))
    if not isinstance(looping, bool) or confidence is None:
        return None
    reason = value.get("reason")
    return Answer(looping, confidence, _cut(reason, 300) if isinstance(reason, str) else "")
