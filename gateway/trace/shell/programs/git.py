"""git: its subcommand is what it does; status, log, diff, show, blame ... and bare listings
(``git branch``, ``git stash list``) read; its path operands (not refs) are the files."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import EXTENSION, flag, has, key, options, resolve
from .search import grep

_READS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "blame",
        "ls-files",
        "rev-parse",
        "grep",
        "shortlog",
        "describe",
        "reflog",
        "cat-file",
        "ls-tree",
        "whatchanged",
        "annotate",
        "ls-remote",
        "rev-list",
        "show-ref",
        "name-rev",
        "count-objects",
        "version",
        "help",
    }
)
_LISTS = frozenset({"branch", "tag", "remote", "submodule"})  # bare: a listing
_TOP = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_VALUES = frozenset(
    {
        "-n",
        "-m",
        "-F",
        "-b",
        "-B",
        "-L",
        "--max-count",
        "--author",
        "--since",
        "--until",
        "--grep",
        "--format",
        "--pretty",
        "-U",
        "--unified",
        "--skip",
        "-S",
        "-G",
        "-e",
        "-f",
        "--message",
        "--file",
        "--date",
        "-A",
        "-C",
        "--context",
    }
)


def git(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """git: its subcommand; status, log, diff, show, blame ... and bare listings read."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        name, value, takes = flag(words[i], _TOP)
        if name == "-C" and (takes or value):
            cwd = resolve(value or (words[i + 1] if i + 1 < len(words) else "."), cwd)
        i += 2 if takes else 1
    if i >= len(words):
        return Part(program, [], "read", program)
    sub, rest = words[i], words[i + 1 :]
    if sub == "grep":
        part = grep("git grep", rest, stage, cwd)
        return Part(program, part.files, "read", key("git", part.key))
    operands, flags = options(rest, _VALUES)
    explicit = rest[rest.index("--") + 1 :] if "--" in rest else []
    paths = [w for w in operands if w in explicit or (":" not in w and ".." not in w and _path(w))]
    files = [resolve(w, cwd) for w in paths]
    shown = [resolve(w, cwd) if w in paths else w for w in operands]
    listing = (sub in _LISTS and not operands) or (
        operands[:1] in (["list"], ["show"]) and sub in ("stash", "worktree", "remote")
    )
    reads = sub in _READS or (listing and not has(flags, "-d", "-D", "--delete", "-m", "-M", "-c", "-C"))
    return Part(program, files, "read" if reads else "run", key(program, sub, *shown))


def _path(word: str) -> bool:
    """A git operand that is a path, not a ref (``origin/main`` is a ref, ``src/`` a path)."""
    return bool(EXTENSION.search(word)) or word.endswith("/") or word.startswith(("./", "/", "../", "~"))
