"""What a call acts on: its target (a file, a URL, a query, an element, a command's head).

Real loops vary their arguments (another replacement text, another flag) while hitting the same
thing again and again; the target is what stays. It is read from the parsed arguments: the first
of ``TraceSettings.target_keys`` the call carries, qualified by a one-word action beside it
(OpenHands' ``{"command": "str_replace", "path": ...}`` and ``{"command": "view", ...}`` act
differently on one file), else the head of a shell command under ``command_keys``.
"""

from __future__ import annotations

import shlex
from typing import Any, NamedTuple

from gateway.trace.paths import PATCH_START, canonical_path, patch_file
from gateway.trace.settings import ToolRole
from gateway.trace.shell import command_of, parse

COMMAND_MARK = "$ "  # starts the target of a shell command: `$ python run.py`
_ACTION_KEYS = ("command", "action", "operation", "op", "mode", "method")
_MAX_ACTION_CHARS = 24
_MAX_TARGET_CHARS = 300
_PATCH_SCAN = 512  # `apply_patch <<'EOF'` names its patch right away


def call_target(value: Any, target_keys: tuple[str, ...], command_keys: tuple[str, ...]) -> str:
    """The target of a call with parsed arguments ``value``; "" when it names none."""
    if not isinstance(value, dict):
        return ""
    for key in target_keys:
        found = value.get(key)
        if isinstance(found, str) and found.strip():
            action = _action(value)
            target = found.strip()[:_MAX_TARGET_CHARS]
            return f"{action} {target}" if action else target
    for key in command_keys:
        found = value.get(key)
        if isinstance(found, list) and found and all(isinstance(w, str) for w in found):
            # argv form; Codex's ["bash", "-lc", "cat a.txt"] carries the command line whole
            found = found[2] if len(found) == 3 and found[1] in ("-c", "-lc") else shlex.join(found)
        if isinstance(found, str) and found.strip():
            head = command_head(found)
            return COMMAND_MARK + head if head else ""
    return ""


class Acted(NamedTuple):
    """What a call acts on and how, read through its tool's role (an agent profile's) or, for a
    shell command, through the command itself (gateway/trace/shell/)."""

    target: str = ""  # "" when neither names one: the generic reading decides
    action: str = ""
    paced: bool = False
    command: str | None = None  # the argument holding the command line, when there is one
    read_key: str = ""  # the command as the read of one file it is ("read a.py"), else ""
    file: str = ""  # the file it reads, writes, lists or searches (gateway/trace/paths.py), or ""


_NOTHING = Acted()
# A generic multi-purpose file tool's verb (OpenHands' and SWE-agent's str_replace_editor
# ``command``, an ``action`` or ``operation`` key), as a ToolEvent action.
_VERBS = {
    **dict.fromkeys(("view", "read", "cat", "open", "show"), "read"),
    **dict.fromkeys(("str_replace", "replace", "insert", "edit", "undo_edit", "patch", "append"), "edit"),
    **dict.fromkeys(("create", "write", "overwrite", "save"), "write"),
    **dict.fromkeys(("list", "ls"), "list"),
    **dict.fromkeys(("search", "grep", "find"), "search"),
}
# A shell command's kind, as a ToolEvent action: only reading is a read, only sleeping a wait.
_SHELL_ACTIONS = {"read": "read", "wait": "wait"}


def acted_on(value: Any, role: ToolRole | None, target_keys: tuple[str, ...], command_keys: tuple[str, ...]) -> Acted:
    """The target, action and pacing of a call with parsed arguments ``value``.

    A shell command's target is the file it acts on, not its program: the same missing file
    read with `cat`, `head`, `grep` or `sed` is one failing target, and a loop varies the
    program, its flags and its range, never the file. Commands that name no file keep their
    stable head (`$ npm test`). A tool with a role names its target argument itself."""
    if not isinstance(value, dict):
        return _NOTHING if role is None else Acted(action=role.action)
    if role is None and any(isinstance(value.get(k), str) and value[k].strip() for k in target_keys):
        # A multi-purpose tool's {"command": "view", "path": ...}: call_target reads the target,
        # its verb says what it does (a view is a read of the file, str_replace an edit).
        return Acted(action=_VERBS.get(_action(value).lower(), ""))
    keys = (role.command,) if role is not None and role.command else (() if role is not None else command_keys)
    for key in keys:
        line = _command_line(value, key)
        if line is not None:
            return _shell(line, key, role)
    if role is None:
        return _NOTHING
    found = _text(lookup(value, role.target)) if role.target else ""
    target = found[:_MAX_TARGET_CHARS]
    file = canonical_path(found) if role.action in _ON_FILES and found else ""
    return Acted(
        f"{role.action} {target}" if target else "", role.action, role.paced or _waits(value, role.wait), file=file
    )


# Actions whose target names a file (a search's or a listing's target is a pattern: their file,
# when they name one, is under a path key; see ``file_of``).
_ON_FILES = frozenset({"read", "edit", "write"})


def _waits(value: dict[str, Any], key: str | None) -> bool:
    waited = lookup(value, key) if key else None
    # JSON's true is no number of seconds.
    return (isinstance(waited, (int, float)) and not isinstance(waited, bool) and waited > 0) or (
        isinstance(waited, str) and _positive(waited)
    )


def _positive(text: str) -> bool:
    try:
        return float(text) > 0
    except ValueError:
        return False


def lookup(value: Any, path: str) -> Any:
    """The value at ``path`` in parsed arguments: ``a.b`` walks mappings, ``a[]`` takes every
    element of a list (Cline's ``files[].path``: the path of each file read), ``a|b`` is the
    first of the two present (a tool whose versions name one argument two ways); None when
    absent."""
    if "|" in path:
        return next((found for p in path.split("|") if (found := lookup(value, p)) is not None), None)
    head, _, rest = path.partition(".")
    each = head.endswith("[]")
    found = value.get(head[:-2] if each else head) if isinstance(value, dict) else None
    if each:
        if not isinstance(found, list):
            return None
        return [x for x in (lookup(item, rest) if rest else item for item in found) if x is not None]
    return lookup(found, rest) if rest else found


def _text(found: Any) -> str:
    if isinstance(found, list):
        return " ".join(dict.fromkeys(t for t in map(_text, found) if t))
    return found.strip() if isinstance(found, str) else ""


def _command_line(value: dict[str, Any], key: str) -> str | None:
    """The command line under ``key``: a string, an argv list (Codex's ``["bash", "-lc", ...]``),
    or with ``key[]`` a list of command lines run one after the other (Cline's ``commands``)."""
    if key.endswith("[]"):
        lines = [c for c in (lookup(value, key) or []) if isinstance(c, str) and c.strip()]
        return " && ".join(lines) if lines else None
    found = lookup(value, key)
    return found if isinstance(found, str) and found.strip() else command_of({"command": found})


def _shell(line: str, key: str, role: ToolRole | None) -> Acted:
    top = key.split(".", 1)[0].removesuffix("[]")
    at = line.find(PATCH_START, 0, _PATCH_SCAN)
    if at >= 0:  # `apply_patch <<'EOF' ... EOF` through the shell: an edit of the patch's file
        file = patch_file(line[at:])
        return Acted(f"edit {file}" if file else "", "edit", False, top, "", file)
    parsed = parse(line)
    if not parsed.key:
        return Acted(action=role.action if role else "")
    operand = parsed.files[0] if parsed.files and parsed.kind != "wait" else parsed.key
    action = _SHELL_ACTIONS.get(parsed.kind, role.action if role is not None else "shell")
    read_key = parsed.key if parsed.kind == "read" and len(parsed.files) == 1 else ""
    # The argument compared as the read: the top-level one holding the command line.
    file = canonical_path(parsed.files[0]) if parsed.files and parsed.kind != "wait" else ""
    return Acted(COMMAND_MARK + operand[:_MAX_TARGET_CHARS], action, parsed.paced, top, read_key, file)


def file_of(value: Any, raw: str, acted: Acted, file_keys: tuple[str, ...]) -> str:
    """The file a call acts on: as its role or shell command reads it, else the first of
    ``file_keys`` holding a path (a search or listing given a path, a generic client's tool),
    else the first file an ``apply_patch`` envelope in its arguments names; "" when none."""
    if acted.file or acted.command is not None:
        return acted.file
    if isinstance(value, dict):
        for key in file_keys:
            found = value.get(key)
            if isinstance(found, str) and (path := canonical_path(found)):
                return path
        patch = next((v for v in value.values() if isinstance(v, str) and v.startswith(PATCH_START)), "")
        return patch_file(patch) if patch else ""
    return patch_file(raw) if raw.startswith(PATCH_START) else ""


def _action(value: dict[str, Any]) -> str:
    for key in _ACTION_KEYS:
        word = value.get(key)
        if isinstance(word, str) and 0 < len(word) <= _MAX_ACTION_CHARS and not any(c.isspace() for c in word):
            return word
    return ""


def command_head(command: str) -> str:
    """The stable part of a shell command: its program and what it acts on (a script, a file,
    a URL, a subcommand), from the last step of a chain (`cd repo && python run.py --x 1` is
    `python run.py`). Flags and their values are left out: they are what a loop varies."""
    words = _words(command)
    for i in range(len(words) - 1, -1, -1):  # the last step of `a && b`, the first stage of `b | c`
        if words[i] in ("&&", "||", ";"):
            words = words[i + 1 :]
            break
    if "|" in words:
        words = words[: words.index("|")]
    words = [w for w in words if "=" not in w or w.startswith("-")]  # leading VAR=value assignments
    if not words:
        return ""
    program = words[0].rsplit("/", 1)[-1]
    if program in ("bash", "sh", "zsh") and len(words) >= 3 and words[1] in ("-c", "-lc"):
        return command_head(words[2])  # Codex's ["bash", "-lc", "cat a.txt"]
    rest = [w for w in words[1:] if not w.startswith("-")]
    if program.startswith("python") and "-m" in words:
        at = words.index("-m")
        return f"{program} -m {words[at + 1]}" if at + 1 < len(words) else program
    pathlike = next((w for w in rest if "/" in w or "." in w), None)
    if pathlike is not None and program not in ("git",):
        return f"{program} {pathlike}"
    return f"{program} {rest[0]}" if rest else program


def _words(command: str) -> list[str]:
    try:
        lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:  # unbalanced quotes: the command still has a head
        return command.split()
