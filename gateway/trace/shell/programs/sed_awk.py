"""sed and awk: a script over lines. A script that only picks lines by number (``sed -n '5,9p'``,
``awk 'NR>=5'``) reads a part of a file; another script transforms it and stays in the key;
``sed -i``, awk's ``system()``, ``print >`` and ``-i inplace`` write, which makes a run."""

from __future__ import annotations

import re

from ..part import Part
from ..steps import Stage
from ..words import ASSIGNMENT, code, key, options, resolve

# One sed command that prints lines by number (`5,9p`, `$p`, `10,+5p`), stops (`20q`) or prints a
# /start/,/end/ span: it picks lines, it changes none.
_LINE_PICK = re.compile(
    r"^\s*(?:(?:\d+|\$)(?:\s*,\s*(?:\d+|\$|[+~]\d+))?\s*[pq]|\d+\s*q"
    r"|/[^/]*/\s*,\s*/[^/]*/\s*p)\s*$"
)
_NR = re.compile(r"\bF?NR\s*(==|>=|<=|>|<|!=)|(==|>=|<=|>|<|!=)\s*F?NR\b")
_AWK_WRITES = re.compile(r"\bsystem\s*\(|\bprintf?\b[^;}]*>|\|\s*getline|\bprint[^;}]*\|")


def sed(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """sed: ``-i`` writes; ``-n 'A,Bp'`` (or ``Nq``) reads a part; other scripts transform."""
    scripts, operands, quiet, in_place = _sed_words(words)
    files = [resolve(w, cwd) for w in operands if w != "-"]
    commands = [c for s in scripts for c in re.split(r"[;\n]", s) if c.strip()]
    picks = (
        bool(commands)
        and all(_LINE_PICK.match(c) for c in commands)
        and (quiet or all(c.strip().endswith("q") for c in commands))
    )
    if in_place:
        return Part(program, files, "run", key(program, *files))
    if not files:
        return Part(program, [], "read", key(program, *scripts), ranged=picks, filter=picks)
    if picks:
        return Part(program, files, "read", key("read", *files), reader=True, ranged=True)
    return Part(program, files, "read", key(program, *scripts, *files))


def _sed_words(words: list[str]) -> tuple[list[str], list[str], bool, bool]:
    """(scripts, operands, quiet ``-n``, in place ``-i``); without ``-e`` the first operand is the script."""
    scripts: list[str] = []
    operands: list[str] = []
    quiet = in_place = False
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word in ("-e", "--expression", "-f", "--file") and i < len(words):
            scripts.append(words[i] if word in ("-e", "--expression") else "")
            operands += [words[i]] if word in ("-f", "--file") else []
            i += 1
        elif word.startswith("--"):
            quiet = quiet or word in ("--quiet", "--silent")
            in_place = in_place or word.startswith("--in-place")
            if word.startswith("--expression="):
                scripts.append(word.partition("=")[2])
        elif word.startswith("-") and len(word) > 1:
            letters = word[1:].split("i", 1)[0] if "i" in word else word[1:]
            in_place = in_place or "i" in word[1:].split("e", 1)[0]
            quiet = quiet or "n" in letters
            if letters.endswith("e") and i < len(words):
                scripts.append(words[i])
                i += 1
        else:
            operands.append(word)
    if not scripts and operands:
        scripts.append(operands.pop(0))
    return scripts, operands, quiet, in_place


def awk(program: str, words: list[str], stage: Stage, cwd: str) -> Part:
    """awk: ``NR`` conditions pick lines of a file; ``system()``/``print >`` and ``-i inplace`` write."""
    operands, flags = options(words, frozenset({"-F", "-v", "-f", "-i", "--file", "--include"}), numbers=False)
    sources = [v for n, v in flags if n in ("-f", "--file")]
    script = "" if sources else (operands.pop(0) if operands else "")
    files = [resolve(w, cwd) for w in sources + operands if w != "-" and not ASSIGNMENT.match(w)]
    writes = bool(_AWK_WRITES.search(script)) or any(n == "-i" and v == "inplace" for n, v in flags)
    picks = bool(_NR.search(script)) and not re.search(r"\$[1-9]|\bEND\b", script)
    if writes:
        return Part(program, files, "run", key(program, code(script), *files))
    if not operands and not sources:
        return Part(program, [], "read", key(program, code(script)), ranged=picks, filter=picks)
    if picks:
        return Part(program, files, "read", key("read", *files), reader=True, ranged=True)
    return Part(program, files, "read", key(program, code(script), *files))
