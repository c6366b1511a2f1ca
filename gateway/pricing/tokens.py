"""Token counts: tiktoken for the models litellm counts with it, offline.

litellm counts OpenAI models with tiktoken (``o200k_base`` for the gpt-4o family, otherwise the
encoding tiktoken names for the model, else ``cl100k_base``). The encodings' rank files ship
inside the litellm package under tiktoken's cache names, so tiktoken is pointed at that
directory (``TIKTOKEN_CACHE_DIR``, unless the operator set one) and never downloads: an encoding
whose file is not in the cache is not used, and that model's tokens are estimated.

Other models' tokenizers (Anthropic, Gemini, Llama, ...) are not tiktoken's; their tokens are
estimated as characters / 4 and flagged as estimated.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

from gateway.pricing.table import Price, package_dir
from gateway.protocols.base import ItemText

CACHE_ENV = "TIKTOKEN_CACHE_DIR"
BUNDLED = "litellm_core_utils/tokenizers"  # inside the litellm package
OPENAI_PROVIDERS = frozenset({"openai", "azure", "text-completion-openai", "azure_text"})
ENCODINGS = ("cl100k_base", "o200k_base", "p50k_base", "r50k_base")
_URL = "https://openaipublic.blob.core.windows.net/encodings/{}.tiktoken"  # tiktoken's cache key source

Count = Callable[[str], int]


def encoding_name(model: str, price: Price | None) -> str | None:
    """The encoding litellm would count ``model`` with; None when it is not an OpenAI model."""
    if price is not None and price.tokenizer:
        return price.tokenizer
    name = model.split("/", 1)[1] if "/" in model else model
    if price is not None and price.provider and price.provider not in OPENAI_PROVIDERS:
        return None
    import tiktoken.model

    if "gpt-4o" in name:
        return "o200k_base"
    try:
        return tiktoken.model.encoding_name_for_model(name)
    except KeyError:
        # litellm's default for an OpenAI model tiktoken does not know by name
        return "cl100k_base" if price is not None and price.provider in OPENAI_PROVIDERS else None


class Tokenizers:
    """Loaded encodings by name (each loads once, in the thread that first needs it)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self.cache_dir = cache_dir
        self._loaded: dict[str, Count | None] = {}
        self._lock = threading.Lock()

    def counter(self, encoding: str | None) -> Count | None:
        if encoding is None:
            return None
        with self._lock:
            if encoding not in self._loaded:
                self._loaded[encoding] = self._load(encoding)
            return self._loaded[encoding]

    def _load(self, encoding: str) -> Count | None:
        cache = self._cache()
        if cache is None or not (cache / hashlib.sha1(_URL.format(encoding).encode()).hexdigest()).is_file():
            return None  # never a download
        import tiktoken

        try:
            loaded = tiktoken.get_encoding(encoding)
        except Exception:
            return None
        return lambda text: len(loaded.encode(text, disallowed_special=()))

    def _cache(self) -> Path | None:
        if configured := os.environ.get(CACHE_ENV):
            return Path(configured)
        bundled = self.cache_dir or _bundled()
        if bundled is not None:
            os.environ[CACHE_ENV] = str(bundled)  # tiktoken reads its cache directory from here only
        return bundled


def _bundled() -> Path | None:
    found = package_dir()
    return found / BUNDLED if found is not None and (found / BUNDLED).is_dir() else None


def item_tokens(count: Count, piece: ItemText) -> int:
    """One conversation item as litellm counts a chat message: 3 tokens of framing, its text,
    its author name, its calls' names and arguments (``piece``: the item read by its protocol)."""
    total = 3 + count(piece.text)
    if piece.name is not None:
        total += 1 + count(piece.name)
    return total + sum(count(part) for part in piece.calls)
