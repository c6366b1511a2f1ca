"""When the judge is asked, what its answers make of the verdict, and how the detector reads it:
pure functions over traces built by the real trace builder."""

from __future__ import annotations

import json
from dataclasses import replace

import orjson
import pytest

from gateway.detectors.base import Finding
from gateway.detectors.judge import LlmJudgeSettings
from gateway.detectors.judge import detect as judge_detect
from gateway.judge.prompt import Answer, read_answer, transcript
from gateway.judge.schedule import due, next_verdict
from gateway.policy.actions import Action
from gateway.policy.engine import Judgement
from gateway.trace.builder import build_trace
from gateway.trace.model import Conversation, JudgeVerdict, ToolCall, Trace, Turn, WarnedCall
from gateway.trace.settings import TraceSettings


def trace_of(*steps: tuple[str, dict, str], user: str = "please do the task") -> Trace:
    turns = [Turn(0, "user", user)]
    for n, (tool, args, result) in enumerate(steps, start=1):
        call = ToolCall(f"call_{n}", tool, json.dumps(args))
        turns += [
            Turn(len(turns), "assistant", "", (call,)),
            Turn(len(turns) + 1, "tool", result, tool_call_id=call.id),
        ]
    return build_trace(Conversation(tuple(turns)), TraceSettings())


ON = LlmJudgeSettings(enabled=True, after_rounds=3, min_interval=5, max_interval=15)
SUSPECT = Judgement(Action.PASS, Action.PASS, None, (Finding("no_progress", 2, (1, 2), ("ls",), "x"),))
QUIET = Judgement(Action.PASS, Action.PASS, None, ())


def listing(n: int):
    return trace_of(*[("ls", {"path": "."}, "a b")] * n)


def test_asked_only_after_enough_rounds_and_on_suspicion():
    assert not due(listing(2), SUSPECT, ON)
    assert due(listing(3), SUSPECT, ON)
    assert not due(listing(3), QUIET, ON)
    warned = replace(listing(3), warned=(WarnedCall("call_1", "similar_repeat"),))
    assert due(warned, QUIET, ON)


def test_its_own_verdict_is_no_new_suspicion():
    own = Judgement(Action.WARN, Action.WARN, None, (Finding("llm_judge", 1, (3,), ("ls",), "x"),))
    assert not due(listing(3), own, ON)
    assert not due(replace(listing(3), warned=(WarnedCall("call_3", "llm_judge"),)), QUIET, ON)


@pytest.mark.parametrize(
    ("answer", "interval", "streak"),
    [
        (Answer(True, 1.0, "same"), 5, 1),  # sure it loops: soon again
        (Answer(False, 1.0, "fine"), 15, 0),  # sure it is fine: much later
        (Answer(True, 0.5, "unsure"), 10, 0),  # unsure: between, and not a confident verdict
    ],
)
def test_the_interval_adapts_to_the_confidence(answer, interval, streak):
    trace = listing(4)
    verdict = next_verdict(trace, answer, ON)
    assert verdict.next_round == trace.rounds + interval and verdict.streak == streak
    assert verdict.call_id == trace.latest.call_id


def test_the_next_check_waits_for_the_interval_and_the_streak_goes_on():
    trace = listing(4)
    first = next_verdict(trace, Answer(True, 0.95, "same"), ON)
    later = replace(listing(4 + 2), verdict=first)
    assert not due(later, SUSPECT, ON)
    after = replace(listing(first.next_round), verdict=first)
    assert due(after, SUSPECT, ON)
    assert next_verdict(after, Answer(True, 0.97, "still"), ON).streak == 2


def test_the_detector_reads_a_confident_verdict_of_this_run_only():
    trace = listing(4)
    mine = JudgeVerdict(trace.events[-1].call_id, True, 0.95, "same listing", 2, 9)
    found = judge_detect(replace(trace, verdict=mine), ON)
    assert found is not None and found.count == 2 and ("reason", "same listing") in found.details
    assert judge_detect(replace(trace, verdict=replace(mine, confidence=0.5)), ON) is None
    assert judge_detect(replace(trace, verdict=replace(mine, call_id="another-run")), ON) is None
    assert judge_detect(replace(trace, verdict=replace(mine, looping=False)), ON) is None


def completion(content: str, usage: dict | None = None) -> bytes:
    return orjson.dumps({"choices": [{"message": {"content": content}}], "usage": usage or {}})


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"looping": true, "confidence": 0.92, "reason": "same call"}', Answer(True, 0.92, "same call")),
        ('```json\n{"looping": false, "confidence": 1.4}\n```', Answer(False, 1.0, "")),
        ("I think it is looping.", None),
        ('{"looping": "yes", "confidence": 0.9}', None),
        ('{"looping": true}', None),
    ],
)
def test_answers_are_read_leniently_but_never_guessed(content, expected):
    answer, prompt, completion_tokens = read_answer(completion(content, {"prompt_tokens": 7, "completion_tokens": 3}))
    assert answer == expected and (prompt, completion_tokens) == (7, 3)


def test_the_transcript_shows_the_task_and_the_latest_calls_cut_short():
    settings = LlmJudgeSettings(max_calls=2, max_chars=40)
    trace = trace_of(
        ("ls", {"path": "."}, "x" * 500),
        ("ls", {"path": "."}, "a b"),
        ("cat", {"path": "a"}, "text"),
        user="tidy the folder",
    )
    text = transcript(trace, settings)
    assert text.startswith("The agent's task: tidy the folder")
    assert "(1 earlier calls not shown)" in text and "2. ls(" in text and "3. cat(" in text
    assert "x" * 41 not in text
