"""What one program's handler makes of its stage.

A handler is ``(program, words after it, stage, cwd) -> Part | Runs``: it reads the words of one
program and says what that program touches and does. A program that only starts another command
(``python -m M``, ``bash -c "..."``) answers :class:`Runs`, so only the chain reader recurses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .steps import Stage


@dataclass(slots=True)
class Part:
    program: str
    files: list[str]
    kind: str = "run"
    key: str = ""
    reader: bool = False  # reads the content of its files: its key is "read <files>"
    ranged: bool = False  # picks a part of what it reads
    filter: bool = False  # only picks lines of its input (head, tail, sed -n 'A,Bp'): not in a key
    paced: bool = False


@dataclass(frozen=True, slots=True)
class Runs:
    """A stage that runs another command, which is then what it does: ``stage`` (``python -m M``'s
    M and its words) is read as a stage, ``text`` (``bash -c``'s) as a chain of its own."""

    program: str
    stage: Stage | None = None
    text: str = ""


Handler = Callable[[str, list[str], Stage, str], Part | Runs]
