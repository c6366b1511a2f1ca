"""Interpreters and test runners: what they run is the target.

``python -m M`` runs the program M (``python -m pytest`` is ``pytest``); ``python -c``/``node -e``
code and a heredoc fed to an interpreter are kept in the key; else the script and its path-like
arguments are the files. ``bash -c "..."`` is a command of its own; ``bash run.sh``, ``./run.sh``
and ``bin/test`` are the script. pytest's operands are test paths.
"""

from __future__ import annotations

import re

from ..part import Part, Runs
from ..steps import Stage
from ..words import basename, code, code_paths, flag, key, options, pathlike, resolve, unique

SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[mtw]?$")
_PY_VALUES = frozenset({"-m", "-c", "-W", "-X", "-Q"})
_EVAL_FLAGS = frozenset({"-e", "--eval", "-p", "--print", "-c", "-E", "-r"})
_PYTEST_VALUES = frozenset(
    {
        "-k",
        "-m",
        "-p",
        "-c",
        "-o",
        "-W",
        "-n",
        "-r",
        "--tb",
        "--maxfail",
        "--durations",
        "--rootdir",
        "--deselect",
        "--ignore",
        "--ignore-glob",
        "--log-level",
        "--junitxml",
        "--basetemp",
        "--confcutdir",
        "--cov-report",
        "--timeout",
        "--count",
        "--import-mode",
        "--log-cli-level",
        "--dist",
        "--color",
        "--capture",
        "--override-ini",
    }
)


def python(program: str, words: list[str], stage: Stage, cwd: str) -> Part | Runs:
    """python: ``-m M`` runs the program M (``python -m pytest`` is ``pytest``); ``-c`` code and a
    heredoc are kept in the key; else the script is the target."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        name, value, takes = flag(words[i], _PY_VALUES)
        value = words[i + 1] if takes and i + 1 < len(words) else value
        i += 2 if takes else 1
        if name == "-m" and value:
            return Runs(program, stage=Stage([value, *words[i:]], [], [], stage.doc))
        if name == "-c":
            return _inline("python", words[i:], cwd, f"-c {code(value)}", code_paths(value, cwd))
    return _interpreter("python", words[i:], stage, cwd)


def node_like(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """node, ruby, perl, php, tsx ...: ``-e`` code in the key, else the script."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] in _EVAL_FLAGS and i + 1 < len(words):
            return _inline(program, words[i + 2 :], cwd, f"-e {code(words[i + 1])}", code_paths(words[i + 1], cwd))
        i += 1
    return _interpreter(program, words[i:], stage, cwd)


def shell(program: str, words: list[str], stage: Stage, cwd: str) -> Part | Runs:
    """bash/sh: ``-c "..."`` is parsed as a command of its own; a script file is its key."""
    i = 0
    while i < len(words) and words[i].startswith(("-", "+")) and words[i] != "-":
        if "c" in words[i][1:] and not words[i].startswith("--") and i + 1 < len(words):
            return Runs(program, text=words[i + 1])
        i += 2 if words[i] in ("-o", "+o", "--rcfile", "--init-file") else 1
    words = words[i:]
    if not words or words[0] == "-":
        return Part(program, [], "run", key(program, f"<<{code(stage.doc)}" if stage.doc else ""))
    part = _interpreter(program, words, stage, cwd)
    part.key = part.key.split(" ", 1)[1]  # `bash run.sh` is `./run.sh`
    return part


def script(word: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """``./run.sh``, ``bin/test``: the program is a file of the project, itself the target."""
    part = _interpreter(basename(word), [word, *words], stage, cwd)
    part.key = part.key.split(" ", 1)[1]
    return part


def pytest(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """pytest: its operands are test paths (``tests/``, ``./tests`` and ``tests`` are one)."""
    operands, _ = options(words, _PYTEST_VALUES, numbers=False)
    files = [resolve(w, cwd) for w in operands]
    return Part("pytest", files, "run", key("pytest", *files))


def _inline(family: str, args: list[str], cwd: str, inline: str, opened: list[str] | None = None) -> Part:
    """Inline code run with arguments: the code in the key; the files are the path-like
    arguments, then those the code itself names (``opened``)."""
    operands, _ = options(args)
    given = [resolve(w, cwd) for w in operands if pathlike(w)]
    shown = (resolve(w, cwd) if pathlike(w) else w for w in operands)
    return Part(family, unique(given + (opened or [])), "run", key(family, inline, *shown))


def _interpreter(family: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """A script run by an interpreter: the script and its path-like arguments are touched."""
    if not words or words[0] == "-":
        inline = f"<<{code(stage.doc)}" if stage.doc else ""
        return _inline(family, words[1:], cwd, inline)
    run = resolve(words[0], cwd)
    operands, _ = options(words[1:])
    files = [run] + [resolve(w, cwd) for w in operands if pathlike(w)]
    shown = [resolve(w, cwd) if pathlike(w) else w for w in operands]
    return Part(family, files, "run", key(family, run, *shown))
