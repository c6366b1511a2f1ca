"""Prices and token counts for savings, without importing litellm (see ``table`` and ``tokens``)."""

from gateway.pricing.table import Price, PriceTable, configured, read_table
from gateway.pricing.tokens import Tokenizers

__all__ = ["Price", "PriceTable", "Tokenizers", "configured", "read_table"]
