"""The optional model judge (``detectors.llm_judge``): asks a model whether a run is stuck.

Off the request's path: a request whose run looks suspicious to the cheap detectors starts a
check in the background (``JudgeService.consider``); its verdict is kept in the session's state
and applied by the ``llm_judge`` detector from the session's next request on. The verdict text
is what the policy's warning shows the model.
"""

from gateway.judge.service import JudgeService

__all__ = ["JudgeService"]
