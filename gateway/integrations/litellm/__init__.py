"""LoopGuard as a LiteLLM proxy guardrail. In the proxy's ``config.yaml``::

    guardrails:
      - guardrail_name: loopguard
        litellm_params:
          guardrail: gateway.integrations.litellm.LoopGuardrail
          mode: [pre_call, post_call]
          default_on: true
          loopguard_policy: default          # a policy file, or a shipped pack name
          loopguard_config: /etc/loopguard.yaml   # optional: state (memory / Redis), sessions, audit

Importing this package imports litellm (the proxy has it loaded already).
"""

import os

# Before litellm is imported anywhere through this package: its bundled price table, no fetch.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from gateway.integrations.litellm.guardrail import LoopGuardrail

__all__ = ["LoopGuardrail"]
