"""Prefixes: words that run the command after them (``FOO=1``, ``timeout 60``, ``nohup``, ``env``,
``uv run``, ``npx``, ``xargs``, ``watch -n 5`` ...). The command they run is what a stage does;
``watch`` paces it."""

from __future__ import annotations

from .words import ASSIGNMENT, basename, flag

_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "pdm", "hatch", "rye"})  # `X run ...`
_RUNNER_VALUES = frozenset({"--with", "--python", "-p", "--env", "-e", "--project", "--directory"})
_WRAPPERS: dict[str, frozenset[str]] = {
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "time": frozenset({"-f", "-o"}),
    "nohup": frozenset(),
    "exec": frozenset(),
    "command": frozenset(),
    "builtin": frozenset(),
    "nice": frozenset({"-n"}),
    "ionice": frozenset({"-c", "-n"}),
    "stdbuf": frozenset({"-o", "-e", "-i"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "sudo": frozenset({"-u", "-g", "-C", "-h"}),
    "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E"}),
    "npx": frozenset({"-p", "--package", "-c"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "caffeinate": frozenset(),
    "unbuffer": frozenset(),
}


def unwrap(words: list[str]) -> tuple[list[str], bool]:
    """The command a prefix runs (``FOO=1``, ``timeout 60``, ``nohup``, ``env``, ``uv run``,
    ``npx``, ``xargs``, ``watch -n 5`` ...) and whether one paced it (``watch``)."""
    paced = False
    for _ in range(8):
        while words and (ASSIGNMENT.match(words[0]) or words[0] in _KEYWORDS):
            words = words[1:]
        if not words:
            break
        program = basename(words[0])
        rest = _WRAPPERS.get(program)
        if program in _RUNNERS and words[1:2] == ["run"]:
            rest = _RUNNER_VALUES
            words = words[1:]
        if rest is None:
            break
        operands_at = _first_operand(words[1:], rest)
        if program == "timeout" and operands_at < len(words) - 1:
            operands_at += 1  # its duration
        paced = paced or program == "watch"
        words = [w for w in words[1 + operands_at :] if not (program == "env" and ASSIGNMENT.match(w))]
    return words, paced


def _first_operand(words: list[str], values: frozenset[str]) -> int:
    """The index of the first word after a prefix's own flags (and ``env``'s assignments)."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        _, _, takes = flag(words[i], values)
        i += 2 if takes else 1
    while i < len(words) and ASSIGNMENT.match(words[i]):
        i += 1
    return min(i, len(words))
