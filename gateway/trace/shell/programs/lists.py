"""Listings and shows: programs that look at files without reading them out (``ls``, ``wc``,
``diff``, ``jq``) or show state and touch no file (``pwd``, ``ps``, ``date``, ``echo``)."""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import has, key, options, resolve

LISTERS = frozenset(
    {
        "ls",
        "tree",
        "du",
        "stat",
        "file",
        "wc",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "readlink",
        "realpath",
        "diff",
        "cmp",
        "sort",
        "uniq",
        "cut",
        "column",
        "fold",
        "test",
        "[",
        "[[",
        "jq",
        "yq",
        "xmllint",
        "tac",
        "rev",
        "sum",
        "cksum",
        "dirname",
    }
)
SHOWS = frozenset(
    {
        "pwd",
        "which",
        "type",
        "whoami",
        "id",
        "uname",
        "date",
        "echo",
        "printf",
        "ps",
        "pgrep",
        "env",
        "printenv",
        "hostname",
        "nproc",
        "free",
        "uptime",
        "df",
        "lsof",
        "history",
        "basename",
        "locale",
        "groups",
        "tty",
        "w",
        "who",
        "seq",
        "expr",
        "cal",
        "true",
        "false",
    }
)
BANNERS = frozenset({"echo", "printf"})
_VALUED_LISTERS = frozenset({"du", "tree", "sort", "cut", "jq", "yq", "column", "fold", "stat", "file", "uniq"})
_LIST_VALUES = frozenset(
    {
        "-I",
        "-L",
        "-P",
        "-d",
        "--max-depth",
        "-c",
        "-k",
        "-t",
        "-f",
        "-o",
        "-w",
        "--arg",
        "--argjson",
        "-F",
        "-i",
        "--ignore",
        "--format",
        "--printf",
    }
)


def lister(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """ls, wc, stat, diff, jq ...: they look at files (their operands) without reading them out."""
    operands, flags = options(words, _LIST_VALUES if program in _VALUED_LISTERS else frozenset())
    query = operands.pop(0) if program in ("jq", "yq") and operands and not has(flags, "-f", "--from-file") else ""
    operands = [w for w in operands if w not in ("]", "]]", "!", "=", "==", "!=")]
    files = [resolve(w, cwd) for w in operands if w != "-"]
    kind = "run" if program == "sort" and has(flags, "-o") else "read"
    return Part(program, files, kind, key(program, query, *files))


def shows(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """pwd, ps, date, echo ...: they show state, touch no file; their operands stay in the key."""
    operands, _ = options(words)
    if program in BANNERS:
        operands = []  # the text shown varies, what it does does not
    return Part(program, [], "read", key(program, *operands))
