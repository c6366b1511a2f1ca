"""touch, rm, cp, mv, tee, chmod, editors, archivers ...: every operand is a file they change,
which makes a run, never a read."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import key, options, resolve

WRITERS = frozenset(
    {
        "touch",
        "rm",
        "rmdir",
        "mkdir",
        "cp",
        "mv",
        "ln",
        "tee",
        "unlink",
        "shred",
        "chmod",
        "chown",
        "chgrp",
        "install",
        "truncate",
        "vim",
        "vi",
        "nano",
        "emacs",
        "code",
        "patch",
        "tar",
        "unzip",
        "zip",
        "gzip",
        "gunzip",
        "dos2unix",
    }
)
_VALUES = frozenset(
    {"-m", "-s", "-t", "-S", "--suffix", "--target-directory", "--mode", "--size", "--reference", "--backup"}
)


def writer(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """touch, rm, cp, mv, tee, chmod ...: every operand is a file they change."""
    operands, _ = options(words, _VALUES, numbers=False)
    if program in ("chmod", "chown", "chgrp") and operands:
        operands = operands[1:]  # the mode or the owner
    files = [resolve(w, cwd) for w in operands if w != "-"]
    return Part(program, files, "run", key(program, *files))
