"""Tokens and cost that stopped work would have spent. Shared by ``loopguard replay`` (what a
recorded run would have saved) and the live savings sink (what each reject / terminate saved).

Prices come from ``gateway.pricing``: litellm's bundled price table read as a data file (never
by importing litellm) under the operator's ``pricing:`` entries. Tokens are counted with tiktoken
for the models litellm counts with it, else estimated as characters / 4 and flagged as estimated.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.pricing.table import Price, PriceTable, read_table
from gateway.pricing.tokens import Tokenizers, encoding_name, item_tokens
from gateway.protocols.base import ItemText
from gateway.protocols.chat.protocol import KIND as CHAT
from gateway.protocols.roles import Kind

# Messages whose protocol is not named (LiteLLM's guardrail hands every model's history over in
# OpenAI chat shape) are read as chat.
DEFAULT: Kind = CHAT

CHARS_PER_TOKEN = 4


@dataclass(slots=True)
class Savings:
    tokens: int  # tokens of the messages the stopped work would have sent and produced
    cost: float | None  # USD; None when the model has no price (table or config)
    estimated: bool  # tokens estimated as chars/4 (no tokenizer for the model)


@dataclass(frozen=True, slots=True)
class Method:
    """How one model's savings are counted, for operators (``/metrics``, replay)."""

    tokens: str  # a tiktoken encoding's name, or "estimated"
    price: str  # "table" (litellm's list price), "config" (``pricing:``) or "none"


class Pricer:
    """Prices messages for a model. The price table is read on first use (a ~3 MB JSON file,
    ~0.1 s), so a process that never stops a loop never reads it; pricers in one process share
    one parsed table while its file is unchanged."""

    def __init__(
        self,
        model_override: str | None = None,
        *,
        configured: Mapping[str, Price] | None = None,
        table: PriceTable | None = None,
        tokenizers: Tokenizers | None = None,
    ) -> None:
        self.model_override = model_override
        self.configured = dict(configured or {})
        self.methods: dict[str, Method] = {}  # every model priced so far, and how
        self._table = table
        self._tokenizers = tokenizers or Tokenizers()
        self._lock = threading.Lock()

    @property
    def estimated(self) -> set[str]:
        """Models whose tokens were estimated as characters / 4."""
        return {m for m, how in self.methods.items() if how.tokens == "estimated"}

    @property
    def unpriced(self) -> set[str]:
        """Models with no price: their savings are tokens only."""
        return {m for m, how in self.methods.items() if how.price == "none"}

    def load(self) -> PriceTable:
        with self._lock:
            if self._table is None:
                self._table = PriceTable(read_table(), self.configured)
            return self._table

    def savings(self, messages: list[Any], model: str | None, adapter: Kind = DEFAULT) -> Savings:
        """Tokens of ``messages`` (items of ``adapter``'s protocol) and their price: what the
        model wrote at the output rate, everything else at the input rate."""
        prefix = "" if self.model_override else adapter.declared.price_prefix  # a cloud's model ids
        model = self.model_override or model or ""
        price = self.load().price(model, prefix) if model else None
        encoding = encoding_name(model, price) if model else None
        count = self._tokenizers.counter(encoding)
        self.methods[model or "(no model)"] = Method(
            encoding if encoding is not None and count is not None else "estimated",
            price.source if price is not None else "none",
        )
        tokens_in = tokens_out = 0
        for message in messages:
            piece = adapter.requests.item_text(message)
            tokens = item_tokens(count, piece) if count is not None else _estimate(piece)
            if piece.output:
                tokens_out += tokens
            else:
                tokens_in += tokens
        cost = None if price is None else tokens_in * price.input + tokens_out * price.output
        return Savings(tokens_in + tokens_out, cost, count is None)


def estimate(messages: list[Any], adapter: Kind = DEFAULT) -> Savings:
    """Tokens as characters / 4, unpriced."""
    return Savings(sum(_estimate(adapter.requests.item_text(m)) for m in messages), None, True)


def one_round(messages: list[Any], adapter: Kind = DEFAULT) -> list[Any]:
    """The work one more looping round costs: the history sent again (input) and the model
    repeating its last item (output). A lower bound: a loop left alone runs many rounds."""
    last = next((m for m in reversed(messages) if adapter.requests.item_text(m).output), None)
    return [*messages, last] if last is not None else list(messages)


def _estimate(piece: ItemText) -> int:
    size = len(piece.text) + sum(len(part) for part in piece.calls)
    return max(1, size // CHARS_PER_TOKEN)
