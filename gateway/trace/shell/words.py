"""Words: flags and their values, operands, the shape of a path, paths resolved against ``cd``,
and keys built from what is left."""

from __future__ import annotations

import posixpath
import re

from .command import MAX_CODE_CHARS, MAX_KEY_CHARS

URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")
NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?[smhdkKMG]?$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def pathlike(word: str) -> bool:
    """A word that names a file by its shape: a slash or a file extension (not a URL, number, flag)."""
    if not word or word.startswith("-") or URL.match(word) or any(c.isspace() for c in word):
        return False
    return "/" in word or bool(EXTENSION.search(word))


def resolve(path: str, cwd: str) -> str:
    """``path`` relative to the directory a ``cd`` moved to, normalised (``./a/`` is ``a``)."""
    if URL.match(path):
        return path
    if not cwd or path.startswith(("/", "~", "$")):
        return posixpath.normpath(path) if path not in ("", "-") else path
    return posixpath.normpath(posixpath.join(cwd, path))


def options(
    words: list[str], values: frozenset[str] = frozenset(), numbers: bool = True
) -> tuple[list[str], list[tuple[str, str]]]:
    """(operands, [(flag, value)]) of ``words`` (the program excluded). A flag in ``values`` takes
    the next word (or what is attached: ``-n5``, ``--lines=5``); with ``numbers``, a number right
    after any other flag is that flag's value too (``--epochs 10``). After ``--`` all are operands."""
    operands: list[str] = []
    flags: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            operands.extend(words[i:])
            break
        if not word.startswith("-") or word == "-" or (NUMBER.match(word) and word.startswith("+")):
            operands.append(word)
            continue
        name, value, takes = flag(word, values)
        numeric = (
            numbers and not value and i < len(words) and NUMBER.match(words[i]) and not words[i].startswith(("+", "-"))
        )
        if i < len(words) and (takes or numeric):
            value, i = words[i], i + 1
        flags.append((name, value))
    return operands, flags


def flag(word: str, values: frozenset[str]) -> tuple[str, str, bool]:
    """(name, attached value, whether it takes the next word)."""
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        return name, value, not eq and name in values
    if word[1:].isdigit():
        return word, word[1:], False  # `head -20`
    for at, letter in enumerate(word[1:], start=1):
        if "-" + letter in values:
            rest = word[at + 1 :]
            return "-" + letter, rest, not rest
    return word, "", False


def has(flags: list[tuple[str, str]], *names: str) -> bool:
    return any(name in names for name, _ in flags)


def key(*parts: str) -> str:
    return " ".join(" ".join(p for p in parts if p).split())[:MAX_KEY_CHARS]


def code(text: str) -> str:
    return " ".join(text.split())[:MAX_CODE_CHARS]


_QUOTED = re.compile(r"""(['"])([^'"\s]{1,300})\1""")


def code_paths(text: str, cwd: str) -> list[str]:
    """The files inline code names in string literals (``open('conf/a.yaml')``,
    ``readFileSync("a.json")``): a one-liner that opens a file acts on it."""
    return [resolve(m.group(2), cwd) for m in _QUOTED.finditer(text[: MAX_CODE_CHARS * 8]) if pathlike(m.group(2))]


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))
