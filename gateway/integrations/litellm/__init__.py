"""LoopGuard as a LiteLLM proxy guardrail. In the proxy's ``config.yaml``::

    guardrails:
      - guardrail_name: loopguard
        litellm_params:
          guardrail: gateway.integrations.litellm.LoopGuardrail
          mode: [pre_call, post_call]
          default_on: true
          loopguard_policy: default          # a policy file, or a shipped pack name
          loopguard_config: /etc/loopguard.yaml   # optional: state (memory / Redis), sessions, audit

``LoopGuardrail`` is imported when first asked for (the proxy's loader asks for it by name), so
the package's litellm-free parts (``session``) import without litellm's seconds of start-up.
"""

import os
from typing import TYPE_CHECKING, Any

# Before litellm is imported anywhere through this package: its bundled price table, no fetch.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

if TYPE_CHECKING:
    from gateway.integrations.litellm.guardrail import LoopGuardrail

__all__ = ["LoopGuardrail"]


def __getattr__(name: str) -> Any:
    if name == "LoopGuardrail":
        from gateway.integrations.litellm.guardrail import LoopGuardrail

        return LoopGuardrail
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
