"""Set-up steps of a chain: ``cd``, ``sleep``, ``source``, ``export``, ``set``, environment
activations ... prepare the main step and are never it. ``cd X`` moves where later relative files
are; a ``sleep N`` with N > 0 paces the chain."""

from __future__ import annotations

import re

from .words import resolve

_SKIPPED = frozenset(
    {
        "source",
        ".",
        "export",
        "set",
        "unset",
        "alias",
        "ulimit",
        "trap",
        "shopt",
        "true",
        ":",
        "clear",
        "umask",
        "wait",
        "exit",
        "return",
        "fi",
        "done",
        "esac",
        "for",
        "case",
        "then",
        "else",
        "do",
        "popd",
    }
)
_MANAGERS = frozenset({"conda", "nvm", "pyenv", "mamba"})
_ACTIVATES = frozenset({"activate", "deactivate", "use", "shell", "local"})  # conda, nvm, pyenv
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)[smhd]?$")


def skipped(program: str, words: list[str]) -> bool:
    """Whether a step only sets up (``source``, ``export``, ``conda activate`` ...) or is empty."""
    return not words or program in _SKIPPED or bool(program in _MANAGERS and words[1:2] and words[1] in _ACTIVATES)


def cd(words: list[str], cwd: str) -> str:
    """The directory ``cd``/``pushd`` with these operands moves to (``~`` without one)."""
    operands = [w for w in words if not w.startswith("-") or w == "-"]
    if not operands or operands[0] == "~":
        return "~"
    return cwd if operands[0] == "-" else resolve(operands[0], cwd)


def positive(words: list[str]) -> bool:
    """Whether ``sleep`` with these operands waits at all (``sleep 0`` does not; ``$T`` may)."""
    operands = [w for w in words if not w.startswith("-")]
    if not operands:
        return False
    found = _DURATION.match(operands[0])
    return float(found.group(1)) > 0 if found else True
