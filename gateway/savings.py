"""Tokens and cost that stopped work would have spent: litellm's token counter and its bundled
price table, offline. Shared by ``loopguard replay`` (what a recorded run would have saved) and
the live savings sink (what each reject / terminate saved).

litellm is imported here only, lazily: it takes seconds to import, so the gateway loads it in a
background thread when the first run is stopped, and the replay command when it prices its first
conversation.
``LITELLM_LOCAL_MODEL_COST_MAP`` is set before the import so litellm never fetches its table.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Any

CHARS_PER_TOKEN = 4


@dataclass(slots=True)
class Savings:
    tokens: int  # tokens of the messages the stopped work would have sent and produced
    cost: float | None  # USD; None when the model is not in the price table (or not loaded)
    estimated: bool  # tokens estimated as chars/4 (unknown model, or litellm unavailable)


def load_litellm() -> Any:
    """litellm with its bundled price table, or None when it is not installed."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # the bundled table, no fetch
    try:
        import litellm  # noqa: PLC0415 - deliberately lazy
    except ImportError:
        return None
    litellm.suppress_debug_info = True  # it prints provider hints for unknown models
    return litellm


class Pricer:
    """Prices messages for a model. ``savings`` imports litellm on first use; a pricer built with
    ``lazy=False`` only prices once ``load()`` ran (elsewhere) and estimates tokens until then."""

    def __init__(self, model_override: str | None = None, *, lazy: bool = True) -> None:
        self.model_override = model_override
        self.unknown: set[str] = set()  # models priced by estimate, reported to the operator
        self._lazy = lazy
        self._litellm: Any = None
        self._loaded = threading.Event()
        self._known: dict[str, bool] = {}

    @property
    def loaded(self) -> bool:
        return self._loaded.is_set()

    def load(self) -> bool:
        """Import litellm now (seconds); True when prices are available."""
        if not self._loaded.is_set():
            self._litellm = load_litellm()
            self._loaded.set()
        return self._litellm is not None

    def savings(self, messages: list[Any], model: str | None) -> Savings:
        """Tokens of ``messages`` and their price: assistant messages at the output rate,
        everything else at the input rate."""
        model = self.model_override or model or ""
        litellm = self._lib() if model else None
        if litellm is None or not self._is_known(litellm, model):
            self.unknown.add(model or "(no model)")
            return estimate(messages)
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
        if self._lazy:
            self.load()
        return self._litellm if self._loaded.is_set() else None

    def _is_known(self, litellm: Any, model: str) -> bool:
        if model not in self._known:
            try:
                litellm.cost_per_token(model=model, prompt_tokens=1, completion_tokens=1)
                self._known[model] = True
            except Exception:  # noqa: BLE001 - litellm raises several types for an unknown model
                self._known[model] = False
        return self._known[model]


def estimate(messages: list[Any]) -> Savings:
    """Tokens as characters / 4, unpriced: what is known before (or without) litellm."""
    return Savings(sum(_estimate(m) for m in messages), None, True)


def one_round(messages: list[Any]) -> list[Any]:
    """The work one more looping round costs: the history sent again (input) and the model
    repeating its last call (output). A lower bound: a loop left alone runs many rounds."""
    last = next((m for m in reversed(messages) if isinstance(m, dict) and m.get("role") == "assistant"), None)
    return [*messages, last] if last is not None else list(messages)


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
