"""Lexing: a command line's words, operators and heredoc bodies, in order.

The scan is quote-aware: quotes, escapes, ``$(...)`` and backticks keep what they enclose in one
word, so an operator inside quotes or escaped (find's ``\\;``) is a word. Words are dequoted with
:mod:`shlex`; unbalanced quotes fall back to plain splitting.
"""

from __future__ import annotations

import re
import shlex

WORD = "w"
OP = "op"
DOC = "doc"  # a heredoc body

_OPS = ("&>>", "<<<", "<<-", ";;", "&&", "||", "|&", "&>", ">>", ">|", ">&", "<&", "<<", "<>", ";", "&", "|", ">", "<")
_OP_CHARS = frozenset(";&|<>")
_PLAIN = re.compile(r"[^\s\\'\"`$#(){};&|<>]+")  # a run of characters that mean nothing to the shell


def lex(text: str) -> list[tuple[str, str]]:
    """Words, operators and heredoc bodies, in order. Quotes, escapes, ``$(...)`` and backticks
    keep what they enclose in one word; a newline ends a step like ``;``; ``2>&1`` is dropped."""
    scan = _Scan(text)
    while scan.i < len(text):
        scan.step()
    scan.flush()
    scan.out.extend((DOC, "") for _ in scan.pending)  # a heredoc with no newline after its marker has no body
    return scan.out


class _Scan:
    """One left-to-right scan: the tokens so far, the word being built (``quoted`` once a quote or
    an escape is in it) and the heredoc delimiters waiting for the next newline."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0
        self.out: list[tuple[str, str]] = []
        self.word: list[str] = []
        self.quoted = False
        self.pending: list[str] = []

    def step(self) -> None:
        text, i = self.text, self.i
        c = text[i]
        if c == "\\":
            self._escape()
        elif c in "'\"`":
            self._take(_closing(text, i), quoted=True)
        elif c == "$" and text[i + 1 : i + 2] in ("(", "{"):
            self._take(_balanced(text, i + 1), quoted=False)
        elif c == "#" and not self.word:
            self._comment()
        elif c == "\n":
            self._newline()
        elif c.isspace():
            self.flush()
            self.i += 1
        elif c in "()" or (c in "{}" and not self.word and (i + 1 >= len(text) or text[i + 1].isspace())):
            self.flush()  # subshells and groups: their steps are read as the chain's own
            self.out.append((OP, ";"))
            self.i += 1
        elif c in _OP_CHARS:
            self._operator()
        else:
            plain = _PLAIN.match(text, i)
            self.word.append(plain.group() if plain else c)
            self.i = plain.end() if plain else i + 1

    def flush(self) -> None:
        if self.word:
            self.out.append((WORD, dequote("".join(self.word))))
            self.word.clear()
        self.quoted = False

    def _take(self, end: int, quoted: bool) -> None:
        """A quoted span or a substitution, kept whole in the word."""
        self.word.append(self.text[self.i : end])
        self.quoted = self.quoted or quoted
        self.i = end

    def _escape(self) -> None:
        """A backslash escapes the next character; before a newline it joins the lines."""
        if self.text[self.i + 1 : self.i + 2] == "\n":
            self.i += 2
            return
        self._take(self.i + 2, quoted=True)

    def _comment(self) -> None:
        while self.i < len(self.text) and self.text[self.i] != "\n":
            self.i += 1

    def _newline(self) -> None:
        """A newline ends a step; the bodies of heredocs opened on its line follow it."""
        self.flush()
        self.i += 1
        for delimiter in self.pending:
            body, self.i = _heredoc(self.text, self.i, delimiter)
            self.out.append((DOC, body))
        self.pending.clear()
        self.out.append((OP, ";"))

    def _operator(self) -> None:
        """An operator; a digit word right before a redirection is a file descriptor (``2>err``),
        and a duplicated descriptor (``2>&1``, ``>&-``) touches nothing, so both are dropped."""
        text = self.text
        op = next(o for o in _OPS if text.startswith(o, self.i))
        if op[0] in "<>" and self.word and not self.quoted and "".join(self.word).isdigit():
            self.word.clear()
        self.flush()
        self.i += len(op)
        if op in (">&", "<&"):
            j = self.i
            while j < len(text) and (text[j].isdigit() or text[j] == "-"):
                j += 1
            if j > self.i:
                self.i = j
                return
            op = "&>"
        if op in ("<<", "<<-"):
            delimiter, self.i = _delimiter(text, self.i)
            self.pending.append(delimiter)
        self.out.append((OP, op))


def _closing(text: str, start: int) -> int:
    """The index after the quote closing the one at ``start`` (the end when unbalanced)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        if text[i] == "\\" and quote != "'":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return len(text)


def _balanced(text: str, start: int) -> int:
    """The index after the bracket closing the one at ``start`` (quotes inside are skipped)."""
    pairs = {"(": ")", "{": "}"}
    opening, closing = text[start], pairs[text[start]]
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c in "'\"`":
            i = _closing(text, i)
            continue
        if c == "\\":
            i += 2
            continue
        depth += (c == opening) - (c == closing)
        i += 1
        if depth == 0:
            return i
    return len(text)


def _delimiter(text: str, i: int) -> tuple[str, int]:
    """A heredoc's delimiter word after ``<<`` (dequoted) and the index after it."""
    while i < len(text) and text[i] in " \t":
        i += 1
    start = i
    while i < len(text) and not text[i].isspace() and text[i] not in _OP_CHARS:
        i = _closing(text, i) if text[i] in "'\"" else i + 1
    return dequote(text[start:i]), i


def _heredoc(text: str, i: int, delimiter: str) -> tuple[str, int]:
    """The body of a heredoc starting at ``i`` and the index after its closing line."""
    lines: list[str] = []
    while i < len(text):
        end = text.find("\n", i)
        end = len(text) if end == -1 else end
        line = text[i:end]
        i = end + 1
        if line.strip() == delimiter:
            return "\n".join(lines), i
        lines.append(line)
    return "\n".join(lines), len(text)


def dequote(raw: str) -> str:
    """A word as the shell passes it; ``$(...)`` and backticks stay as written."""
    if not any(c in raw for c in "'\"\\") or raw.startswith(("$(", "`")):
        return raw
    try:
        return " ".join(shlex.split(raw))
    except ValueError:  # unbalanced quotes: plain splitting
        return raw.replace("'", "").replace('"', "")
