"""How two calls' arguments differ: in values (another id, page, direction, method) or in text.

Detectors that compare similar calls use this to tell *another item* (the same request about a
different thing: the next page, another product, the other direction) from *another attempt*
(the same request reworded or retried with an edited command line).
"""

from __future__ import annotations

import re

import orjson

VALUE_CHARS = 64  # a value one tries alternatives of is short: an id, a code, a method name
_ALNUM = re.compile(r"[^\W_]+")  # runs of letters and digits
_NO_DIGITS = str.maketrans("", "", "0123456789")


def differing_leaves(x: object, y: object) -> list[tuple[object, object]] | None:
    """The pairs of values where two JSON structures of the same shape differ; None when their
    shapes differ (another set of fields is a different request, not another value)."""
    if x == y:
        return []
    if isinstance(x, dict) and isinstance(y, dict):
        if x.keys() != y.keys():
            return None
        out: list[tuple[object, object]] = []
        for key in x:
            found = differing_leaves(x[key], y[key])
            if found is None:
                return None
            out += found
        return out
    if isinstance(x, dict | list) or isinstance(y, dict | list):
        return None
    return [(x, y)]


def value_like(value: object) -> bool:
    """A value one tries alternatives of: a number, a flag, or a short token (an id, a method
    name, a code), not a command line or a sentence (which are edits of the same attempt)."""
    if isinstance(value, str):
        return len(value) <= VALUE_CHARS and not any(ch.isspace() for ch in value)
    return True


def differing_values(args_a: str, args_b: str) -> list[tuple[object, object]] | None:
    """The differing leaves of two canonical JSON arguments; None when either is not JSON or
    their shapes differ."""
    try:
        x, y = orjson.loads(args_a), orjson.loads(args_b)
    except orjson.JSONDecodeError:
        return None
    return differing_leaves(x, y)


def other_item(args_a: str, args_b: str) -> bool:
    """The two arguments have one shape and differ only in item-like values: numbers, flags,
    short tokens, or strings whose differing middle (common start and end removed) is a short
    token (`.../item/17` and `.../item/42`, however long the URL)."""
    if args_a == args_b:
        return False
    leaves = differing_values(args_a, args_b)
    if not leaves:
        return False
    return all(item_pair(a, b) for a, b in leaves)


def item_pair(a: object, b: object) -> bool:
    """Two values of one field that name two items: numbers, flags, short tokens, or strings
    whose differing middle is a short token (`pytest -k roundtrip` and `pytest -k unicode`)."""
    if isinstance(a, str) and isinstance(b, str):
        return value_like(_middle(a, b)) and value_like(_middle(b, a))
    return value_like(a) and value_like(b)


def _middle(a: str, b: str) -> str:
    """``a`` without the start and end it shares with ``b``."""
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    return a[start : len(a) - end]


def numbers_only(args_a: str, args_b: str) -> bool:
    """The arguments differ, and only in numbers standing on their own (`solve.py --maze 3` and
    `--maze 4`, `--lr 0.1` and `--lr 0.01`, `maze_2.txt` and `maze_3.txt`): the same command run
    on different items. An element handle such as `e12` / `e13` is not a number of its own."""
    if args_a == args_b or args_a.translate(_NO_DIGITS) != args_b.translate(_NO_DIGITS):
        return False  # the second test at C speed: most arguments differ in more than digits
    x, y = _ALNUM.findall(args_a), _ALNUM.findall(args_b)
    if len(x) != len(y):
        return False
    differs = False
    for p, q in zip(x, y):
        if p != q:
            if not (p.isdigit() and q.isdigit()):
                return False
            differs = True
    return differs


def names_its_value(args: str, other: str, result: str | None) -> bool:
    """Whether ``result`` names what ``args`` differ from ``other`` in: the failure is about
    the item (``missing_3.txt not found``, ``maze 7 has no path``), so calls over other items
    fail each their own way, a sweep. A failure that names none of it (``backend unavailable``
    for every id) does not depend on the item: each call is another attempt of the same thing."""
    if not result:
        return False
    leaves = differing_values(args, other)
    mine = [a for a, _ in leaves] if leaves else _differing_tokens(args, other)
    words: set[str] | None = None
    for value in mine:
        text = str(value)
        if isinstance(value, str) and len(text) >= _MIN_NAMED and text in result:
            return True
        if words is None:
            words = set(_ALNUM.findall(result))
        if text in words or any(part in words for part in _ALNUM.findall(text) if part.isdigit()):
            return True
    return False


_MIN_NAMED = 3  # a shorter string value is matched as a word, as a number is


def _differing_tokens(a: str, b: str) -> list[str]:
    return [p for p, q in zip(_ALNUM.findall(a), _ALNUM.findall(b)) if p != q]
