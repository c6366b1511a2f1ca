"""llm_judge: the verdict of an optional model judge, for loops visible only by their meaning.

Some loops repeat no call and no result: the agent rephrases, tries the same idea in other
words, walks in circles through different pages. Gemini CLI asks a model, after many turns,
whether the conversation is stuck. Here the asking is done by ``gateway.judge``, off the
request's path and only when the cheap detectors already see something suspicious; the verdict
is kept in the session's state and read by the session's next request as ``Trace.verdict``.
This function only reads it: pure and deterministic like every detector (replaying a
conversation with the same verdict gives the same decision).

A verdict counts when it belongs to the run (its call is in the trace), says the run is looping,
and its confidence is at least ``min_confidence``. The count is the streak of such verdicts in a
row, so an operator can escalate on repeated confident verdicts (Gemini CLI stops at the second);
by default it only warns.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from gateway.detectors.base import DetectorSettings, Finding
from gateway.trace.model import Trace

NAME = "llm_judge"


class LlmJudgeSettings(DetectorSettings):
    enabled: bool = False  # opt-in: each check is a model call, paid by the operator
    warn_at: int | None = 1  # a confident verdict warns
    reject_at: int | None = None  # a model's opinion never blocks unless the operator says so
    terminate_at: int | None = None
    # Which model answers (None: the model the request names) and where: None sends the check
    # to the gateway's own upstream with the client's credentials; a base URL (an
    # OpenAI-compatible /v1) is called with the key in the environment variable ``api_key_env``.
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    # When: only once the run has made ``after_rounds`` model-tool round trips, only when a cheap
    # detector reports something (any finding, or a warned pattern in the run), and then at most
    # every ``min_interval`` .. ``max_interval`` rounds: Gemini CLI's adaptive interval, shorter
    # the more confident the last verdict was that the run is looping.
    after_rounds: int = Field(default=8, ge=1)
    min_interval: int = Field(default=5, ge=1)
    max_interval: int = Field(default=15, ge=1)
    min_confidence: float = Field(default=0.9, ge=0.0, le=1.0)  # Gemini CLI's threshold
    # What the judge reads: the run's latest calls, each argument and result cut to a length.
    max_calls: int = Field(default=20, ge=1, le=200)
    max_chars: int = Field(default=400, ge=40, le=8000)
    max_tokens: int = Field(default=300, ge=16, le=4096)  # the judge's answer
    timeout_s: float = Field(default=30.0, gt=0, le=300)

    @model_validator(mode="after")
    def _intervals(self) -> LlmJudgeSettings:
        if self.max_interval < self.min_interval:
            raise ValueError(f"max_interval ({self.max_interval}) must be at least min_interval ({self.min_interval})")
        return self


def detect(trace: Trace, settings: LlmJudgeSettings) -> Finding | None:
    verdict = trace.verdict
    if verdict is None or not verdict.looping or verdict.confidence < settings.min_confidence:
        return None
    latest = trace.latest
    if latest is None or not any(e.call_id == verdict.call_id for e in trace.events):
        return None  # another run's verdict, or one older than the trace's horizon
    return Finding(
        NAME,
        max(1, verdict.streak),
        (latest.step,),
        (latest.tool,),
        f"a reviewing model judged this run stuck (confidence {verdict.confidence:.2f}): {verdict.reason}",
        details=(("reason", verdict.reason), ("confidence", f"{verdict.confidence:.2f}")),
    )
