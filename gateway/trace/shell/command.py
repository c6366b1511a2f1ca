"""What parsing a shell command gives, and the bounds on what is read and kept of it."""

from __future__ import annotations

from dataclasses import dataclass

MAX_CHARS = 4096  # longer commands are parsed on their opening only
MAX_KEY_CHARS = 300
MAX_CODE_CHARS = 200  # inline code (`python -c`, a heredoc) kept in a key


@dataclass(frozen=True, slots=True)
class Command:
    program: str  # the main program, basename ("cat", "python", "pytest"), "" if none
    files: tuple[str, ...]  # files, scripts and URLs touched, resolved against `cd X &&`, in order
    kind: str  # "read" (only reads or shows), "wait" (only sleeps) or "run"
    ranged: bool  # a read of a part of a file (a line range, a head, a tail)
    paced: bool  # the chain sleeps (N > 0) besides acting
    key: str  # what it does without what a loop varies: "read a.py", "pytest tests", "sleep"
