"""When the judge is asked, and what its answer makes of the session's verdict.

Asked only where it can matter: the run has made ``after_rounds`` round trips, a cheap detector
already reports something (any finding, even below its warning threshold, or a warned pattern
in the run), and the previous check of this run is at least its interval behind. The interval
adapts as Gemini CLI's does: the more confident the judge was that the run is looping, the
sooner it is asked again (``min_interval``), the more confident it was that all is well, the
later (``max_interval``).
"""

from __future__ import annotations

from gateway.detectors.judge import NAME, LlmJudgeSettings
from gateway.judge.prompt import Answer
from gateway.policy.engine import Judgement
from gateway.trace.model import JudgeVerdict, Trace


def due(trace: Trace, judgement: Judgement, settings: LlmJudgeSettings) -> bool:
    latest = trace.latest
    if latest is None or latest.proposed or trace.rounds < settings.after_rounds:
        return False
    if not (any(f.detector != NAME for f in judgement.findings) or any(w.detector != NAME for w in trace.warned)):
        return False  # the judge's own verdict is no new suspicion
    previous = current(trace)
    return previous is None or trace.rounds >= previous.next_round


def current(trace: Trace) -> JudgeVerdict | None:
    """The session's verdict when it belongs to this run (its call is in the trace)."""
    verdict = trace.verdict
    if verdict is None or not any(e.call_id == verdict.call_id for e in trace.events):
        return None
    return verdict


def next_verdict(trace: Trace, answer: Answer, settings: LlmJudgeSettings) -> JudgeVerdict:
    """The verdict ``answer`` makes, judged on ``trace``: its streak goes on from the run's
    previous confident "looping" verdict, and it sets when the judge may be asked again."""
    latest = trace.latest
    assert latest is not None  # due() asks only about a trace with calls
    previous = current(trace)
    confident = answer.looping and answer.confidence >= settings.min_confidence
    streak = (previous.streak if previous is not None else 0) + 1 if confident else 0
    looping_confidence = answer.confidence if answer.looping else 1.0 - answer.confidence
    span = settings.max_interval - settings.min_interval
    interval = settings.min_interval + round(span * (1.0 - looping_confidence))
    return JudgeVerdict(
        latest.call_id, answer.looping, answer.confidence, answer.reason, streak, trace.rounds + interval
    )
