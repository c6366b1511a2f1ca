"""cat, nl, less, bat, xxd ... and head/tail: they print a file's content, whole or a part.

A read of a file is ``read <file>`` however spelled; a range flag (``bat -r``, ``xxd -s``) or a
count (``head -n 40``, ``tail +30``) makes it a read of a part. Without a file they filter their
input: ``cat`` passes it on, ``head``/``tail`` pick lines of it.
"""

from __future__ import annotations

from ..part import Part
from ..steps import Stage
from ..words import has, key, options, resolve

READERS = frozenset(
    {"cat", "nl", "less", "more", "bat", "batcat", "xxd", "hexdump", "od", "strings", "zcat", "zless", "tac"}
)
_VALUES = {
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "bat": frozenset({"-r", "--line-range", "-l", "--language", "-H", "--highlight-line", "--style", "--theme"}),
    "xxd": frozenset({"-s", "-l", "-c", "-g", "-o"}),
    "od": frozenset({"-j", "-N", "-A", "-t", "-w"}),
    "hexdump": frozenset({"-s", "-n", "-e", "-f"}),
    "strings": frozenset({"-n", "-t"}),
}
_RANGES = {"bat": ("-r", "--line-range"), "xxd": ("-s", "-l"), "od": ("-j", "-N"), "hexdump": ("-s", "-n")}
_HEAD_VALUES = frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid", "--max-unchanged-stats"})


def reader(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """cat, nl, less, more, bat ...: the content of files; a part with a range flag."""
    operands, flags = options(words, _VALUES.get(program, frozenset()), numbers=False)
    files = [resolve(w, cwd) for w in operands if w != "-"]
    ranged = has(flags, *_RANGES.get(program, ()))
    if not files:
        return Part(program, [], "read", program, filter=program in ("cat", "nl", "less", "more", "bat"))
    return Part(program, files, "read", key("read", *files), reader=True, ranged=ranged)


def head_tail(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """head/tail: a part of a file when a count is given (``-n 40``, ``-20``, ``+30``)."""
    operands, flags = options(words, _HEAD_VALUES, numbers=False)
    counted = [w for w in operands if w.startswith("+") and w[1:].isdigit()]
    files = [resolve(w, cwd) for w in operands if w not in counted and w != "-"]
    ranged = bool(counted) or any(n in ("-n", "-c", "--lines", "--bytes") or n[1:].isdigit() for n, _ in flags)
    if not files:
        return Part(program, [], "read", program, ranged=True, filter=True)
    return Part(program, files, "read", key("read", *files), reader=True, ranged=ranged)
