"""Text helpers for detectors that read what people and models write: CJK-aware, no dependency.

A jieba-based RAG guard compares queries by word segmentation; jieba is a 20 MB dictionary and a
slow first import, too heavy for a gateway. Instead, a CJK run becomes its overlapping character
bigrams and other text its words ("报销流程规定" -> 报销 销流 流程 程规 规定; "expense policy" ->
expense policy). Bigrams need no dictionary and are deterministic; compared with jieba's words
they are stricter on edits (one changed character touches two bigrams, and bigrams that span a
word boundary differ when words are reordered), so near-duplicates score lower than with jieba,
which is the safe direction for a guard that stops work. A few particles (的 了 吗 ...) are
dropped first, as jieba's single-character words are by a ``len(w) >= 2`` filter.
"""

from __future__ import annotations

import re
import string

# Hiragana/katakana, CJK ideographs (with extension A and compatibility forms), Hangul syllables.
_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{_CJK_CHARS}]+")
# A CJK run, or a word of other letters/digits (underscore kept: snake_case names are one word).
_TOKEN = re.compile(f"[{_CJK_CHARS}]+|[^\\W{_CJK_CHARS}]+")
# Single-character particles that carry no topic; jieba would have cut them out as 1-char words.
_PARTICLES = str.maketrans("", "", "的了吗呢吧啊呀么")
# Trimmed around a whole input before comparing it with a short answer ("好的。" is "好的").
EDGE_PUNCTUATION = string.punctuation + string.whitespace + "。，、！？；：…～·“”‘’（）【】《》「」"


def normalize(text: str) -> str:
    """Lower-case, trimmed, whitespace runs collapsed to one space (lower + strip)."""
    return " ".join(text.lower().split())


def tokens(text: str) -> frozenset[str]:
    """Character bigrams of CJK runs plus words of 2+ characters (words of 2+ characters only)."""
    out: set[str] = set()
    for match in _TOKEN.finditer(text.lower()):
        piece = match.group()
        if _CJK_RUN.fullmatch(piece):
            piece = piece.translate(_PARTICLES)
            out.update(piece[i : i + 2] for i in range(len(piece) - 1))
        elif len(piece) >= 2:
            out.add(piece)
    return frozenset(out)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """|A & B| / |A | B|; 0 when either side is empty (empty word sets never match)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def units(text: str) -> int:
    """A length that means the same in Chinese and English: each CJK character and each other
    word counts one ("体检一下" is 4, "check my holdings" is 3)."""
    total = 0
    for match in _TOKEN.finditer(text):
        piece = match.group()
        total += len(piece) if _CJK_RUN.fullmatch(piece) else 1
    return total
