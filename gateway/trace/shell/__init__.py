"""Shell commands as coding agents write them: the main program, the files touched, what it does.

The target of a shell call is the files and scripts it touches, not its program: the same missing
file read with ``cat``, ``head``, ``grep``, ``sed`` or ``python`` is one failing target, and a
model warned about one spelling switches to another. A loop varies flags and ranges (``sed -n
'1,50p'`` then ``'51,100p'``, ``-q`` then ``-x``), not what it acts on, so the key leaves them out:

- every read of a file's content, whole or a part, is ``read <file>``; a search keeps its pattern
  (``grep foo a.py``: another pattern is another question);
- a run is its program, subcommand or script and operands without flags and flag values
  (``npm test``, ``python run.py``); ``python -m pytest tests/ -q``, ``python3 -m pytest tests -x``
  and ``pytest tests`` are one ``pytest tests`` (``python -m M`` runs the program M, files are
  normalised: ``./`` and a trailing ``/`` dropped);
- the main step of ``a && b; c`` is its last step that is not set-up (``cd``, ``source``,
  ``export``, ``set``, ``sleep``, an ``echo`` banner); within ``a | b`` it is the first stage that
  names a file (the others filter its output), else the first stage; ranging filters (``head``,
  ``tail``, ``sed -n 'A,Bp'``, ``awk 'NR>=A'``) only pick lines and stay out of the key;
- ``cd X &&`` makes later relative files relative to X, so they are resolved against it;
- a ``sleep N`` (N > 0) anywhere in the chain paces the command: consecutive polls that sleep
  before or after looking wait between looks; ``watch -n`` paces too;
- writing (``>``, ``>>``, ``tee``, ``sed -i``, ``cp`` ...) makes a command a run, never a read;
- only the first 4096 characters are parsed and any text gives a Command: parsing never raises.

Words are found by a quote-aware scan (an operator inside quotes or escaped, like find's ``\\;``,
is a word) and dequoted with :mod:`shlex`; unbalanced quotes fall back to plain splitting.

The package reads a command in layers: ``lex`` (words, operators, heredocs), ``steps`` (a chain's
pipelines of stages and their redirections), ``prefixes`` (``timeout``, ``env``, ``uv run`` ...),
``programs`` (one handler per family: readers, sed/awk, search, lists, find, git, interpreters,
fetch, writers, generic) on top of ``words`` (flags, operands, paths, ``cd``), and ``chain`` (the
main step and stage, ``setup_steps`` left out), which gives the :class:`Command`.
"""

from __future__ import annotations

import shlex
from functools import lru_cache
from typing import Any

from .chain import parse_chain
from .command import MAX_CHARS, Command
from .command import MAX_CODE_CHARS as MAX_CODE_CHARS
from .command import MAX_KEY_CHARS as MAX_KEY_CHARS
from .programs.interpreters import SHELLS
from .words import basename

__all__ = ["Command", "command_of", "parse"]


def command_of(value: Any) -> str | None:
    """The command line in parsed JSON arguments: the string under ``command``/``cmd``/``script``,
    or an argv list (Codex's ``["bash", "-lc", "cat a.txt"]`` is ``cat a.txt``); else None."""
    if isinstance(value, dict):
        for name in ("command", "cmd", "script"):
            found = command_of(value.get(name)) if isinstance(value.get(name), list) else value.get(name)
            if isinstance(found, str) and found.strip():
                return found
        return None
    if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
        if len(value) >= 3 and basename(value[0]) in SHELLS and value[1].startswith("-") and "c" in value[1]:
            return value[2] if value[2].strip() else None
        return shlex.join(value)
    return None


def parse(command: str) -> Command:
    """The :class:`Command` of a shell command line; never raises (see the module rules)."""
    if not isinstance(command, str):
        return _EMPTY
    return _parse_cached(command[:MAX_CHARS])


@lru_cache(maxsize=4096)
def _parse_cached(command: str) -> Command:
    try:
        return parse_chain(command, "", 0)
    except Exception:
        words = command.split()
        return Command(basename(words[0]) if words else "", (), "run", False, False, " ".join(words[:2]))


_EMPTY = Command("", (), "run", False, False, "")
