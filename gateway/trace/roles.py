"""What a call means for a loop, beyond its text: neutral (think/plan/log), read-only looking,
free text in its arguments, and the gateway's own text to remove from its result.

Pure functions over one call; the builder stores their verdicts on each ToolEvent.
"""

from __future__ import annotations

import re
from functools import lru_cache
from itertools import islice
from typing import Any

from gateway.trace.model import OWN_TEXT_MARKER

# Free-text arguments: the longest string value, when it reads like prose (mostly plain words).
MIN_PROSE_WORDS = 4
_PLAIN_WORD = re.compile(r"^[(\"'“‘]*[^\W\d_][^\W_]*(['’-][^\W_]+)*[)\"'”’.,;:!?]*$")
# Argument keys that name a target (a file, a command, a record): such a call acts on something,
# so it is never neutral by shape, whatever its text.
_TARGET_KEY = re.compile(
    r"path|file|dir|url|uri|command|cmd|code|script|sql|query|(^|_)id$|ids?$|"
    r"recipient|^to$|email|target|amount|name",
    re.IGNORECASE,
)
TRIVIAL_RESULT_CHARS = 80  # "OK", "Thought recorded", "{}": a result that says nothing
_ECHO_CHARS = 40  # a result that repeats the first 40 characters of the text echoes it

# Tool-name words: a name with a reading verb and no writing verb looks read-only.
_NAME_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_READ_WORDS = frozenset(
    {
        "read",
        "view",
        "get",
        "list",
        "search",
        "find",
        "fetch",
        "lookup",
        "look",
        "show",
        "cat",
        "grep",
        "glob",
        "ls",
        "browse",
        "describe",
        "inspect",
        "retrieve",
        "query",
    }
)
_WRITE_WORDS = frozenset(
    {
        "write",
        "edit",
        "update",
        "create",
        "delete",
        "remove",
        "set",
        "put",
        "post",
        "patch",
        "apply",
        "insert",
        "replace",
        "move",
        "rename",
        "send",
        "submit",
        "execute",
        "exec",
        "run",
        "install",
        "cancel",
        "modify",
        "add",
        "save",
        "upload",
        "book",
        "pay",
        "transfer",
        "refund",
        "exchange",
        "return",
        "make",
        "change",
        "reset",
        "kill",
        "start",
        "stop",
        "commit",
        "push",
    }
)


def prose(value: Any) -> tuple[str, bool]:
    """(the free text of parsed JSON arguments, whether the arguments are only that text).

    The text is the longest top-level string value when it reads like prose, else "". "Only
    text": an object of at most 3 string values, none under a target-like key (path, command,
    id ...)."""
    if not isinstance(value, dict) or not value:
        return "", False
    strings = [v for v in value.values() if isinstance(v, str)]
    text = max(strings, key=len, default="")
    if not is_prose(text):
        return "", False
    only = len(value) <= 3 and len(strings) == len(value) and not any(_TARGET_KEY.search(k) for k in value)
    return text, only


def is_prose(text: str) -> bool:
    words = text.split()
    if len(words) < MIN_PROSE_WORDS:
        return _has_cjk_units(text, 2 * MIN_PROSE_WORDS) and len(words) <= 2 * MIN_PROSE_WORDS
    plain = sum(1 for w in words if _PLAIN_WORD.match(w))
    return plain >= 0.75 * len(words)


# Kana, CJK ideographs and Hangul: scripts written without spaces, where a unit is a word.
_CJK_UNIT = re.compile("[\u3040-\u9fff\uac00-\ud7af]")


def _has_cjk_units(text: str, at_least: int) -> bool:
    """Whether ``text`` holds ``at_least`` CJK units: searched by the regex engine and stopped
    at the last one needed, since a long argument without spaces (a file's content, a blob)
    reaches here whole and a character-by-character count was most of its trace's cost."""
    return next(islice(_CJK_UNIT.finditer(text), at_least - 1, None), None) is not None


def neutral_by_shape(text_only: bool, text: str, result: str | None, ok: bool) -> bool:
    """Free text in, a trivial or echoed result out: the call only records what the agent wrote."""
    if not text_only or result is None or not ok:
        return False
    body = result.strip()
    return len(body) <= TRIVIAL_RESULT_CHARS or text[:_ECHO_CHARS] in body


@lru_cache(maxsize=4096)  # a handful of tool names, judged on every event of every request
def looks_read_only(name: str) -> bool:
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    return bool(words & _READ_WORDS) and not words & _WRITE_WORDS


@lru_cache(maxsize=4096)
def looks_writing(name: str) -> bool:
    """A tool whose name says it changes a file (``write_to_file``, ``replace_in_file``,
    ``create_file``): what a generic client's file tool does when no profile names it."""
    words = {w.lower() for w in _NAME_WORDS.findall(name)}
    return bool(words & _FILE_WRITE_WORDS)


_FILE_WRITE_WORDS = frozenset({"write", "edit", "create", "patch", "apply", "insert", "replace", "save", "append"})


# Shell programs that only look (no writing flags are checked: `sed -i`, `tee`, redirections
# and chains with anything else make the command count as an action).
_READ_PROGRAMS = frozenset(
    {
        "cat",
        "ls",
        "head",
        "tail",
        "grep",
        "rg",
        "find",
        "pwd",
        "file",
        "strings",
        "wc",
        "stat",
        "which",
        "whoami",
        "id",
        "env",
        "ps",
        "tree",
        "du",
        "df",
        "less",
        "more",
        "nl",
        "xxd",
        "hexdump",
        "readelf",
        "objdump",
        "uname",
        "date",
        "echo",
        "type",
    }
)
_READ_GIT = frozenset({"status", "log", "diff", "show", "branch", "blame"})
_COMMAND_KEYS = ("command", "cmd")
# One-word actions of multi-purpose tools (an editor's view, a browser's snapshot) that only look.
_READ_ACTIONS = frozenset(
    {
        "view",
        "read",
        "list",
        "search",
        "find",
        "get",
        "show",
        "open",
        "cat",
        "ls",
        "grep",
        "snapshot",
        "screenshot",
        "inspect",
        "describe",
        "status",
    }
)
_SHELL_CONTROL = re.compile(r"[;&>`]|\$\(|\|\|")


def read_only_command(value: Any) -> bool:
    """A shell tool's command that only reads: one pipeline of reading programs (``cat``, ``ls``,
    ``grep``, ``git status`` ...), no redirection, no chaining with anything else; or a
    multi-purpose tool's one-word action that only looks (``view``, ``snapshot`` ...)."""
    if not isinstance(value, dict):
        return False
    command = next((value[k] for k in _COMMAND_KEYS if isinstance(value.get(k), str)), None)
    action = value.get("action")
    if command in _READ_ACTIONS or (isinstance(action, str) and action in _READ_ACTIONS):
        return True  # a multi-purpose tool asked to look: OpenHands' {"command": "view", "path": ...}
    if not command or _SHELL_CONTROL.search(command):
        return False
    for stage in command.split("|"):
        words = stage.split()
        if not words:
            return False
        program = words[0].rsplit("/", 1)[-1]
        if program == "git":
            if len(words) < 2 or words[1] not in _READ_GIT:
                return False
        elif program not in _READ_PROGRAMS or program == "sed":
            return False
    return True


def own_text_start(text: str) -> int | None:
    """Where the gateway's own text begins in ``text``: the first line that starts with the
    marker (any case); None when there is none. A warning is only ever appended, so what
    precedes it is the tool's."""
    if text[:10].lower() == OWN_TEXT_MARKER:
        return 0
    at = text.find("\n[")
    while at != -1:
        if text[at + 1 : at + 11].lower() == OWN_TEXT_MARKER:
            return at
        at = text.find("\n[", at + 1)
    return None


def own_text_removed(text: str) -> str:
    """``text`` without the gateway's own text (see :func:`own_text_start`)."""
    at = own_text_start(text)
    return text if at is None else text[:at].rstrip()
