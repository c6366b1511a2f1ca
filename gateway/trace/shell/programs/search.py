"""grep, rg, ag, ack: a search keeps its pattern in the key (another pattern is another question)."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import key, options, resolve

_VALUES = {
    "grep": frozenset(
        {
            "-e",
            "-f",
            "-m",
            "-A",
            "-B",
            "-C",
            "-d",
            "-D",
            "--regexp",
            "--file",
            "--max-count",
            "--context",
            "--after-context",
            "--before-context",
            "--include",
            "--exclude",
            "--exclude-dir",
            "--label",
            "--color",
            "--colour",
        }
    ),
    "rg": frozenset(
        {
            "-e",
            "-f",
            "-g",
            "-t",
            "-T",
            "-m",
            "-A",
            "-B",
            "-C",
            "-M",
            "-j",
            "-r",
            "--glob",
            "--type",
            "--type-not",
            "--max-count",
            "--max-depth",
            "--context",
            "--iglob",
            "--replace",
            "--regexp",
            "--file",
            "--max-filesize",
            "--sort",
            "--after-context",
            "--before-context",
            "--max-columns",
            "--threads",
            "--color",
            "--colors",
        }
    ),
    "ag": frozenset({"-A", "-B", "-C", "-G", "-m", "--ignore", "--depth", "--context"}),
}


def grep(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """grep/rg/ag: the pattern (first operand, unless ``-e``/``-f`` give it) stays in the key."""
    table = _VALUES["rg" if program == "rg" else "ag" if program in ("ag", "ack") else "grep"]
    operands, flags = options(words, table, numbers=False)
    patterns = [v for n, v in flags if n in ("-e", "--regexp")]
    sources = [v for n, v in flags if n in ("-f", "--file")]
    if not patterns and not sources and operands:
        patterns.append(operands.pop(0))
    files = [resolve(w, cwd) for w in sources + operands if w != "-"]
    return Part(program, files, "read", key(program, *patterns, *files))
