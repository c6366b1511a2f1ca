"""One file, however a call spells it: paths made comparable.

An agent reaches one file by many spellings: ``/repo/src/a.py`` with its read tool,
``src/a.py`` from the shell after ``cd /repo``, ``./src/a.py`` in a one-liner. A file is one
target whichever tool, program or spelling reaches it, so calls are compared by their file
(``ToolEvent.file``): a path normalised here, made absolute against the working directory the
agent states when it states one, and otherwise matched by suffix (``src/a.py`` is
``/repo/src/a.py``, never ``/repo/lib/a.py``).

Codex's ``apply_patch`` names its files inside the patch (``*** Update File: src/a.py``): its
file is the first one named.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from gateway.trace.shell.words import URL

_GLOB = frozenset("*?[{")
_MAX_CHARS = 300
PATCH_START = "*** Begin Patch"  # how an apply_patch envelope opens
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$", re.MULTILINE)
_PATCH_SCAN_CHARS = 4096  # the first file line comes right after "*** Begin Patch"


def canonical_path(text: str) -> str:
    """``text`` as a file path (quotes, ``./`` and a trailing ``/`` dropped, ``a/../b`` folded),
    or "" when it names no file: a URL, a glob pattern, text with spaces or line breaks."""
    path = text.strip().strip("'\"`")
    if not path or len(path) > _MAX_CHARS or URL.match(path) or any(c in _GLOB or c.isspace() for c in path):
        return ""
    return posixpath.normpath(path)


def resolved(path: str, cwd: str) -> str:
    """``path`` against the working directory ``cwd`` ("" when unknown): absolute when it can be."""
    if not path or not cwd or path.startswith(("/", "~", "$")):
        return path
    return posixpath.normpath(posixpath.join(cwd, path))


def same_file(a: str, b: str) -> bool:
    """Whether two canonical paths can name one file: equal, or one is the other's tail at a
    directory boundary (a relative spelling of the same file)."""
    if a == b:
        return bool(a)
    if not a or not b:
        return False
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return not short.startswith("/") and long.endswith("/" + short)


def inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or lies under it (both canonical; a relative
    directory matches any spelling that ends with it: ``src`` holds ``/repo/src/a.py``)."""
    if not path or not directory:
        return False
    if same_file(path, directory):
        return True
    if directory == ".":
        return not path.startswith("/")
    head = directory.rstrip("/") + "/"
    return path.startswith(head) or (not directory.startswith("/") and "/" + head in path)


def patch_file(text: str) -> str:
    """The first file an ``apply_patch`` envelope names, "" when ``text`` is no such patch."""
    if "*** " not in text[:_PATCH_SCAN_CHARS]:
        return ""
    found = _PATCH_FILE.search(text[:_PATCH_SCAN_CHARS])
    return canonical_path(found.group(1)) if found else ""


def relative(path: str, cwd: str) -> str:
    """``path`` without the working directory it lies under (its spelling relative to it)."""
    return path[len(cwd) + 1 :] if cwd and path.startswith(cwd + "/") else path


# A shell word spelled with a needless ``./`` or quotes around a plain token: `cat './a.txt'`.
_DOT_SLASH = re.compile(r"(?<![\w./~$-])\./(?=[\w.-])")
_QUOTED_WORD = re.compile(r"""(?<![\w\\])(['"])([\w./@%+=:,-]+)\1""")


def respelled(
    value: dict[str, object], file_keys: frozenset[str], command_keys: frozenset[str], cwd: str
) -> dict[str, object]:
    """Arguments with their paths written one way: a file argument canonical and relative to
    the working directory, a command line without needless quotes, ``./`` or working-directory
    prefixes. The same call spelled otherwise is the same call (``cat ./a.txt``, ``cat 'a.txt'``,
    ``cat /repo/a.txt`` in /repo), and calls that differ only in their items still do."""
    out: dict[str, object] | None = None
    for key, text in value.items():
        if not isinstance(text, str):
            continue
        if key in file_keys:
            new = relative(canonical_path(text) or text, cwd)
        elif key in command_keys:
            new = _QUOTED_WORD.sub(r"\2", _DOT_SLASH.sub("", text.replace(cwd + "/", "") if cwd else text))
        else:
            continue
        if new != text:
            out = out if out is not None else dict(value)
            out[key] = new
    return out if out is not None else value


def stated_cwd(texts: Iterable[str], patterns: re.Pattern[str] | None) -> str:
    """The working directory an agent states in its system prompt or first messages
    (``TraceSettings.cwd_patterns``: the path is the pattern's first group), "" when none."""
    if patterns is None:
        return ""
    for text in texts:
        found = patterns.search(text)
        if found:
            path = next((g for g in found.groups() if g), "")
            return canonical_path(path) if path.startswith("/") else ""
    return ""


_CWD_CHARS = 16384  # agents state their directory near the start of a long prompt


class CwdReader:
    """``stated_cwd`` for one settings' patterns, remembered per text: every request of a
    conversation carries the same system prompt and first messages again, and a pattern search
    over a long prompt costs far more than a look-up."""

    __slots__ = ("_known", "_patterns")
    _MAX = 256  # system prompts and opening messages: a handful per agent

    def __init__(self, patterns: re.Pattern[str] | None) -> None:
        self._patterns = patterns
        self._known: dict[str, str] = {}

    def __call__(self, texts: Iterable[str]) -> str:
        for text in texts:
            found = self._known.get(text)
            if found is None:
                if len(self._known) >= self._MAX:
                    self._known.clear()
                found = self._known[text] = stated_cwd((text[:_CWD_CHARS],), self._patterns)
            if found:
                return found
        return ""
