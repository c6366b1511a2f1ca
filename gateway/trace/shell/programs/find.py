"""find: it reads the paths before its expression; ``-delete``, ``-fprint`` or ``-exec`` of a
program that is not a reader change files, which makes a run."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import basename, key, resolve
from .lists import LISTERS, SHOWS
from .readers import READERS

_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_READS = frozenset({"cat", "head", "tail", "sed", "awk", "grep", "egrep", "rg", "ag"}) | READERS | LISTERS | SHOWS


def find(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """find: the paths before its expression; ``-delete`` or ``-exec`` of a writer make it a run."""
    at = next((i for i, w in enumerate(words) if w.startswith(("-", "(", "!"))), len(words))
    paths, expression = words[:at], words[at:]
    files = [resolve(w, cwd) for w in paths]
    kind = "read"
    if "-delete" in expression or "-fprint" in expression:
        kind = "run"
    for i, word in enumerate(expression):
        if word in _ACTIONS and i + 1 < len(expression):
            inner = basename(expression[i + 1])
            if inner not in _READS:
                kind = "run"
    shown = [w for w in expression if not w.startswith("-") and w not in ("{}", ";", "+", "(", ")", "!")]
    return Part(program, files, kind, key(program, *files, *shown))
