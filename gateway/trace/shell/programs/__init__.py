"""Programs: one handler per family of programs, looked up by the program's name.

A handler reads the words after its program (see ``part.py``); a program of the project run by
its path (``./run.sh``) is its own target; any program without a handler is read generically.
"""

from __future__ import annotations

from ..part import Handler, Part, Runs
from ..steps import Stage
from ..words import basename
from .fetch import fetch
from .find import find
from .generic import generic
from .git import git
from .interpreters import PYTHON, SHELLS, node_like, pytest, python, script, shell
from .lists import LISTERS, SHOWS, lister, shows
from .readers import READERS, head_tail, reader
from .search import grep
from .sed_awk import awk, sed
from .writers import WRITERS, writer

HANDLERS: dict[str, Handler] = {
    **dict.fromkeys(READERS, reader),
    "head": head_tail,
    "tail": head_tail,
    "sed": sed,
    "gsed": sed,
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), awk),
    **dict.fromkeys(("grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"), grep),
    **dict.fromkeys(LISTERS - READERS, lister),
    **dict.fromkeys(SHOWS, shows),
    "find": find,
    "git": git,
    "python": python,
    **dict.fromkeys(("node", "ruby", "perl", "php", "tsx", "ts-node", "Rscript", "lua"), node_like),
    **dict.fromkeys(SHELLS, shell),
    "pytest": pytest,
    "py.test": pytest,
    **dict.fromkeys(("curl", "wget", "http", "https", "xh"), fetch),
    **dict.fromkeys(WRITERS, writer),
}


def handle(words: list[str], stage: Stage, cwd: str) -> Part | Runs:
    """What the program ``words[0]`` does with the rest (``python3.11`` is a ``python``)."""
    program = basename(words[0])
    handler = HANDLERS.get("python" if PYTHON.match(program) else program)
    if handler is None and "/" in words[0]:
        return script(words[0], words[1:], stage, cwd)
    return (handler or generic)(program, words[1:], stage, cwd)
