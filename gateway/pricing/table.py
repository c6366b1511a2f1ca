"""List prices per token: litellm's bundled price table, read as data, under the operator's own.

litellm ships its price table as a JSON file inside the package
(``model_prices_and_context_window_backup.json``). The gateway finds that file through the import
system's finder, which locates a package without running it: importing litellm would cost
seconds of CPU with the GIL held and ~190 MB per process, for one file of numbers.

A model is looked up as litellm looks it up: its own name, then without a provider prefix
(``openai/gpt-4o`` -> ``gpt-4o``). Prices from the config (``pricing:``) come first, so an
operator prices a self-hosted model or overrides a list price.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import orjson
import structlog

TABLE_FILE = "model_prices_and_context_window_backup.json"


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # USD per input token
    output: float  # USD per output token
    provider: str  # litellm's provider name ("openai", "anthropic", ...); "" when not known
    source: str  # "table" (litellm's list price) or "config" (the operator's)
    tokenizer: str | None = None  # a tiktoken encoding the operator named for this model


def package_dir(name: str = "litellm") -> Path | None:
    """Where an installed package's files are, found without importing it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    return Path(locations[0]) if locations else None


def read_table(path: Path | None = None) -> Mapping[str, Price]:
    """The per-token prices of every chat-priced model in litellm's table; empty when litellm is
    not installed or its file cannot be read (savings then count tokens only).

    A process reads an unchanged file once: every app it builds (a reloaded config, the suite's
    gateways, ``loopguard replay`` over many sessions) shares the parsed table, read-only. A file
    rewritten in place (litellm upgraded) has another size or modification time and is read again."""
    if path is None:
        found = package_dir()
        path = found / TABLE_FILE if found is not None else None
    if path is None:
        return {}
    try:
        stat = path.stat()
        return _parsed(path, stat.st_mtime_ns, stat.st_size)
    except (OSError, orjson.JSONDecodeError) as exc:  # not cached: read again next time
        structlog.get_logger("loopguard").warning(
            "savings.price_table_unreadable", path=str(path), error=type(exc).__name__
        )
        return {}


@functools.lru_cache(maxsize=4)
def _parsed(path: Path, mtime_ns: int, size: int) -> Mapping[str, Price]:
    raw = orjson.loads(path.read_bytes())
    if not isinstance(raw, dict):
        return {}
    return MappingProxyType({name: price for name, entry in raw.items() if (price := _price(entry)) is not None})


def _price(entry: object) -> Price | None:
    if not isinstance(entry, dict):
        return None
    cost_in, cost_out = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if not isinstance(cost_in, (int, float)) or not isinstance(cost_out, (int, float)):
        return None
    provider = entry.get("litellm_provider")
    return Price(float(cost_in), float(cost_out), provider if isinstance(provider, str) else "", "table")


def configured(pricing: Mapping[str, Any]) -> dict[str, Price]:
    """The config's ``pricing:`` entries (USD per million tokens) as per-token prices."""
    return {
        name: Price(entry.input_usd_per_mtok / 1e6, entry.output_usd_per_mtok / 1e6, "", "config", entry.tokenizer)
        for name, entry in pricing.items()
    }


class PriceTable:
    """Prices by model name: the operator's first, then litellm's."""

    def __init__(self, listed: Mapping[str, Price], configured: Mapping[str, Price] | None = None) -> None:
        self.listed = listed
        self.configured = dict(configured or {})

    def price(self, model: str, prefix: str = "") -> Price | None:
        """``model``'s price: the operator's under any spelling of it, else the table's.
        ``prefix``: the table's provider prefix for the protocol's model ids (a cloud's, which
        it lists apart: ``vertex_ai/claude-sonnet-4-5@20250929``), tried first in the table."""
        names = _spellings(model)
        for name in names:
            if (found := self.configured.get(name)) is not None:
                return found
        for name in (prefix + model, *names) if prefix else names:
            if (found := self.listed.get(name)) is not None:
                return found
        return None


def _spellings(model: str) -> tuple[str, ...]:
    """``openai/gpt-4o`` is priced as itself, else as ``gpt-4o``."""
    if "/" not in model:
        return (model,)
    return (model, model.split("/", 1)[1])
