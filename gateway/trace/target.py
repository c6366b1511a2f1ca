"""What a call acts on: its target (a file, a URL, a query, an element, a command's head).

Real loops vary their arguments (another replacement text, another flag) while hitting the same
thing again and again; the target is what stays. It is read from the parsed arguments: the first
of ``TraceSettings.target_keys`` the call carries, qualified by a one-word action beside it
(OpenHands' ``{"command": "str_replace", "path": ...}`` and ``{"command": "view", ...}`` act
differently on one file), else the head of a shell command under ``command_keys``.
"""

from __future__ import annotations

import shlex
from typing import Any

COMMAND_MARK = "$ "  # starts the target of a shell command: `$ python run.py`
_ACTION_KEYS = ("command", "action", "operation", "op", "mode", "method")
_MAX_ACTION_CHARS = 24
_MAX_TARGET_CHARS = 300



def call_target(value: Any, target_keys: tuple[str, ...], command_keys: tuple[str, ...]) -> str:
    """The target of a call with parsed arguments ``value``; "" when it names none."""
    if not isinstance(value, dict):
        return ""
    for key in target_keys:
        found = value.get(key)
        if isinstance(found, str) and found.strip():
            action = _action(value)
            target = found.strip()[:_MAX_TARGET_CHARS]
            return f"{action} {target}" if action else target
    for key in command_keys:
        found = value.get(key)
        if isinstance(found, list) and found and all(isinstance(w, str) for w in found):
            # argv form; Codex's ["bash", "-lc", "cat a.txt"] carries the command line whole
            found = found[2] if len(found) == 3 and found[1] in ("-c", "-lc") else shlex.join(found)
        if isinstance(found, str) and found.strip():
            head = command_head(found)
            return COMMAND_MARK + head if head else ""
    return ""


def _action(value: dict) -> str:
    for key in _ACTION_KEYS:
        word = value.get(key)
        if isinstance(word, str) and 0 < len(word) <= _MAX_ACTION_CHARS and not any(c.isspace() for c in word):
            return word
    return ""


def command_head(command: str) -> str:
    """The stable part of a shell command: its program and what it acts on (a script, a file,
    a URL, a subcommand), from the last step of a chain (`cd repo && python run.py --x 1` is
    `python run.py`). Flags and their values are left out: they are what a loop varies."""
    words = _words(command)
    for i in range(len(words) - 1, -1, -1):  # the last step of `a && b`, the first stage of `b | c`
        if words[i] in ("&&", "||", ";"):
            words = words[i + 1:]
            break
    if "|" in words:
        words = words[:words.index("|")]
    words = [w for w in words if "=" not in w or w.startswith("-")]  # leading VAR=value assignments
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program in ("bash", "sh", "zsh") and len(words) >= 3 and words[1] in ("-c", "-lc"):
        return command_head(words[2])  # Codex's ["bash", "-lc", "cat a.txt"]
    rest = [w for w in words[1:] if not w.startswith("-")]
    if program.startswith("python") and "-m" in words:
        at = words.index("-m")
        return f"{program} -m {words[at + 1]}" if at + 1 < len(words) else program
    pathlike = next((w for w in rest if "/" in w or "." in w), None)
    if pathlike is not None and program not in ("git",):
        return f"{program} {pathlike}"
    return f"{program} {rest[0]}" if rest else program


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes: the command still has a head
        return command.split()
