"""What the console keeps of an audit event: a small feed entry, and for an intervention the run's
timeline as the detectors saw it (a detail), both JSON.

The timeline is bounded: each argument and result is an excerpt of ``EXCERPT`` characters with
secrets masked (``gateway.console.mask``), and the rows kept are the newest that fit in the
configured bytes per run; how many older calls were left out is recorded. Built off the
request path, by the console's sink.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.audit.events import InterventionEvent, SavingsEvent
from gateway.console.mask import excerpt, mask

EXCERPT = 160  # characters of each argument / result kept
MAX_STEPS = 64  # evidence steps kept per event
_ROOM = 1024  # bytes of a detail that are not rows (text, counts)

# What the model (or the client) was given, by action; how a terminate ended decides its text.
_SENT = {
    "warn": ("warn", "anchor sent to the model"),
    "reject": ("reject", "error observation returned in place of the call"),
}
_ENDED = {
    "answer": ("answer", "note asking the model for its final answer, tools closed"),
    "reply": ("terminate", "termination reply (template) sent to the client"),
    "error": ("terminate", "loop_detected error (422) sent to the client"),
}


def entry(event: InterventionEvent | SavingsEvent) -> bytes:
    if isinstance(event, SavingsEvent):
        return orjson.dumps(
            {
                "k": "s",
                "time": event.time,
                "session": readable(event.session)[:200],
                "request_id": event.request_id,
                "detector": event.detector,
                "action": event.action,
                "model": event.model[:100],
                "tokens": event.tokens,
                "cost_usd": event.cost_usd,
                "estimated": event.estimated,
            }
        )
    context = event.context
    return orjson.dumps(
        {
            "k": "i",
            "time": event.time,
            "session": readable(event.session)[:200],
            "run": event.run,
            "agent": readable(event.agent) if event.agent else event.agent,
            "policy": event.policy,
            "detector": event.detector,
            "action": event.action,
            "would": event.would,
            "tool": event.tool[:200],
            "count": event.count,
            "steps": list(event.steps[-MAX_STEPS:]),
            "shadow": event.shadow,
            "phase": event.phase,
            "request_id": event.request_id,
            "terminate": event.terminate,
            "description": mask(event.description[:400]),
            "protocol": context.protocol if context else None,
            "model": context.model[:100] if context and context.model else None,
        }
    )


def readable(text: str) -> str:
    """A header's value as its sender wrote it. HTTP hands header bytes over as Latin-1, so a
    session id or agent name sent in UTF-8 arrives as mojibake (``caf\u00c3\u00a9`` for ``caf\u00e9``);
    text that decodes as UTF-8 once re-encoded is shown decoded, anything else as it is."""
    if text.isascii():
        return text
    try:
        return text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def detail(event: InterventionEvent, max_bytes: int) -> bytes | None:
    """The run's timeline and the text sent, within ``max_bytes``; None without a context."""
    context = event.context
    if context is None or context.trace is None:
        return None
    kept, total = _rows(context.trace, event, max_bytes - _ROOM)
    text, said = _text(event, context)
    return orjson.dumps(
        {"rows": kept, "omitted": total - len(kept) + context.trace.skipped, "text": text, "text_kind": said}
    )


def _rows(trace: Any, event: InterventionEvent, budget: int) -> tuple[list[list[Any]], int]:
    """The newest rows that fit ``budget`` bytes (only those are excerpted: a long run costs what
    is kept, not what it holds), and how many rows the run has. A row is [step, message, tool,
    args, result, repeat, flag]: flag "vetoed" (our observation is its result), "proposed"
    (judged before the agent ran it) or ""."""
    seen: dict[tuple[str, str], int] = {}
    repeats = []
    for e in trace.events:
        key = (e.tool, e.args_hash)
        seen[key] = seen.get(key, 0) + 1
        repeats.append(seen[key])
    proposed = _proposed(trace, event, seen) if event.phase == "response" else None
    rows = ([] if proposed is None else [proposed]) + [
        (e, repeat) for e, repeat in zip(reversed(trace.events), reversed(repeats))
    ]
    kept = []
    for item in rows:
        row = item if isinstance(item, list) else _row(*item)
        budget -= len(orjson.dumps(row)) + 1
        if budget < 0:
            break
        kept.append(row)
    kept.reverse()
    return kept, len(rows)


def _row(e: Any, repeat: int) -> list[Any]:
    return [
        e.step,
        e.message_index,
        e.tool[:100],
        excerpt(e.raw_args, EXCERPT),
        excerpt(e.result, EXCERPT),
        repeat,
        "vetoed" if e.vetoed else "",
    ]


def _proposed(trace: Any, event: InterventionEvent, seen: dict[tuple[str, str], int]) -> list[Any] | None:
    """The call a response-phase finding judged: not in the executed history, its step beyond it."""
    last = trace.events[-1].step if trace.events else 0
    beyond = [s for s in event.steps if s > last]
    if not beyond:
        return None
    like = next((e for e in reversed(trace.events) if e.step in event.steps), None)
    repeat = seen.get((like.tool, like.args_hash), 0) + 1 if like else 1
    message = (trace.events[-1].message_index + 2) if trace.events else 0
    return [
        max(beyond),
        message,
        (like.tool if like else event.tool)[:100],
        excerpt(like.raw_args, EXCERPT) if like else None,
        None,
        repeat,
        "proposed",
    ]


def _text(event: InterventionEvent, context: Any) -> tuple[str | None, str]:
    policy = context.policy
    if event.action == "pass":
        return None, "nothing sent: held back (shadow mode or max_action)"
    kind, said = (
        _ENDED.get(event.terminate or "", ("terminate", "termination"))
        if event.action == "terminate"
        else _SENT.get(event.action, ("warn", event.action))
    )
    if policy is None:
        return None, said
    extra = {"progress": policy.progress(context.trace)} if kind in ("terminate", "answer") else {}
    return mask(policy.render(kind, context.finding, **extra)[:2000]), said
