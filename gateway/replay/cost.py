"""Tokens and cost the interventions would have saved, from litellm's token counter and its
bundled price table (offline). litellm is imported here only, lazily: it takes seconds to import
and must never load on the gateway's request path or at ``loopguard serve`` startup."""

from __future__ import annotations

import os
from typing import Any

from gateway.replay.model import Savings

CHARS_PER_TOKEN = 4


class Pricer:
    def __init__(self, model_override: str | None = None) -> None:
        self.model_override = model_override
        self.unknown: set[str] = set()  # models priced by estimate, reported to the operator
        self._litellm: Any = None
        self._loaded = False
        self._known: dict[str, bool] = {}

    def savings(self, messages: list[Any], model: str | None) -> Savings:
        """Tokens of ``messages`` (the ones the run would not have produced) and their price:
        assistant messages at the output rate, everything else at the input rate."""
        model = self.model_override or model or ""
        litellm = self._lib() if model else None
        if litellm is None or not self._is_known(litellm, model):
            self.unknown.add(model or "(no model)")
            return Savings(sum(_estimate(m) for m in messages), None, True)
        tokens_in = tokens_out = 0
        for message in messages:
            count = _count(litellm, model, message)
            if isinstance(message, dict) and message.get("role") == "assistant":
                tokens_out += count
            else:
                tokens_in += count
        cost_in, cost_out = litellm.cost_per_token(model=model, prompt_tokens=tokens_in, completion_tokens=tokens_out)
        return Savings(tokens_in + tokens_out, float(cost_in + cost_out), False)

    def _lib(self) -> Any:
        if not self._loaded:
            self._loaded = True
            os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled table, no fetch
            try:
                import litellm  # noqa: PLC0415 - deliberately lazy
                litellm.suppress_debug_info = True  # it prints provider hints for unknown models
            except ImportError:
                litellm = None
            self._litellm = litellm
        return self._litellm

    def _is_known(self, litellm: Any, model: str) -> bool:
        if model not in self._known:
            try:
                litellm.cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
                self._known[model] = True
            except Exception:  # noqa: BLE001 - litellm raises several types for an unknown model
                self._known[model] = False
        return self._known[model]


def _count(litellm: Any, model: str, message: Any) -> int:
    try:
        return int(litellm.token_counter(model=model, messages=[message]))
    except Exception:  # noqa: BLE001 - an odd message shape: estimate this one
        return _estimate(message)


def _estimate(message: Any) -> int:
    if not isinstance(message, dict):
        return len(str(message)) // CHARS_PER_TOKEN
    size = len(str(message.get("content") or ""))
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            size += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return max(1, size // CHARS_PER_TOKEN)
