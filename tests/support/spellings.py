"""Other spellings of a request target: every character of the path percent-encoded once and
twice, in upper, lower and mixed case hex, its letters' case flipped, and what a URL library
or a cloud's frontend might read as more than a path (an encoded or raw ``?`` / ``#``, ``;``,
dot segments, empty segments, a trailing slash, control characters), each where it matters:
at the end of the path and before a ``:method`` verb or the last segment."""

from __future__ import annotations

from collections.abc import Iterator

# Pieces inserted in a path, each a way to make one parse of it differ from another.
INSERTED = (
    "%3F",
    "%3f",
    "%3Fx=1",
    "%253F",
    "%25253F",
    "%23",
    "%23x",
    "%2523",
    "#",
    "#x",
    ";x",
    "%3B",
    "%253B",
    "/",
    "//",
    "/.",
    "/..",
    "%2F",
    "%252F",
    "%2e",
    "%252E",
    "%00",
    "%0A",
    "%20",
    "%2520",
    "%5C",
    "\\",
    "%25",
    "%",
)


def _escape(char: str, upper: bool) -> str:
    code = "".join(f"%{b:02X}" for b in char.encode())
    return code if upper else code.lower()


def encodings(char: str) -> Iterator[tuple[str, str]]:
    """(how, spelling) of one character: single and double escapes, upper, lower and mixed case
    hex (an escape encoded three times is one encoded twice, encoded once more)."""
    for upper in (True, False):
        once = _escape(char, upper)
        yield f"once-{'upper' if upper else 'lower'}", once
        yield f"twice-{'upper' if upper else 'lower'}", once.replace("%", "%25")
    mixed = "".join(f"%{b:02X}"[:2] + f"{b:02X}"[1].lower() for b in char.encode())
    yield "once-mixed", mixed
    yield "twice-mixed", mixed.replace("%", "%25")


def spellings(path: str) -> Iterator[tuple[str, str]]:
    """(what changed, the path spelt so) for ``path``, each distinct spelling once (a character
    whose escape has no hex letter is spelt alike in upper, lower and mixed case); the first is
    the path itself."""
    seen: set[str] = set()
    for what, spelt in _all_spellings(path):
        if spelt not in seen:
            seen.add(spelt)
            yield what, spelt


def _all_spellings(path: str) -> Iterator[tuple[str, str]]:
    yield "as-is", path
    for char in sorted(set(path)):
        at = path.rindex(char)
        for how, spelt in encodings(char):
            yield f"{char!r}-{how}", path[:at] + spelt + path[at + 1 :]
        if char.isalpha():
            yield f"{char!r}-case", path[:at] + char.swapcase() + path[at + 1 :]
    verb = path.rfind(":")
    last = path.rfind("/")
    for piece in INSERTED:
        yield f"end+{piece!r}", path + piece
        yield f"before-last-segment+{piece!r}", path[:last] + piece + path[last:]
        if verb > last:
            yield f"before-verb+{piece!r}", path[:verb] + piece + path[verb:]
