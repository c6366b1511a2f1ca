"""Any other program (``npm test``, ``make build``, ``cargo run``): a run of its operands."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import key, options, pathlike, resolve


def generic(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """Any other program: its operands (subcommands, targets) without flags and numeric flag
    values; the path-like ones are the files it touches."""
    operands, flags = options(words)
    operands = [w for w in operands if not w.startswith("-") or w == "-"]  # `npm test -- --watch`
    files = [resolve(w, cwd) for w in operands if pathlike(w)]
    files += [resolve(v, cwd) for _, v in flags if pathlike(v)]
    shown = [resolve(w, cwd) if pathlike(w) else w for w in operands]
    return Part(program, files, "run", key(program, *shown))
