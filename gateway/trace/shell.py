"""Shell commands as coding agents write them: the main program, the files touched, what it does.

The target of a shell call is the files and scripts it touches, not its program: the same missing
file read with ``cat``, ``head``, ``grep``, ``sed`` or ``python`` is one failing target, and a
model warned about one spelling switches to another. A loop varies flags and ranges (``sed -n
'1,50p'`` then ``'51,100p'``, ``-q`` then ``-x``), not what it acts on, so the key leaves them out:

- every read of a file's content, whole or a part, is ``read <file>``; a search keeps its pattern
  (``grep foo a.py``: another pattern is another question);
- a run is its program, subcommand or script and operands without flags and flag values
  (``npm test``, ``python run.py``); ``python -m pytest tests/ -q``, ``python3 -m pytest tests -x``
  and ``pytest tests`` are one ``pytest tests`` (``python -m M`` runs the program M, files are
  normalised: ``./`` and a trailing ``/`` dropped);
- the main step of ``a && b; c`` is its last step that is not set-up (``cd``, ``source``,
  ``export``, ``set``, ``sleep``, an ``echo`` banner); within ``a | b`` it is the first stage that
  names a file (the others filter its output), else the first stage; ranging filters (``head``,
  ``tail``, ``sed -n 'A,Bp'``, ``awk 'NR>=A'``) only pick lines and stay out of the key;
- ``cd X &&`` makes later relative files relative to X, so they are resolved against it;
- a ``sleep N`` (N > 0) anywhere in the chain paces the command: consecutive polls that sleep
  before or after looking wait between looks; ``watch -n`` paces too;
- writing (``>``, ``>>``, ``tee``, ``sed -i``, ``cp`` ...) makes a command a run, never a read;
- only the first 4096 characters are parsed and any text gives a Command: parsing never raises.

Words are found by a quote-aware scan (an operator inside quotes or escaped, like find's ``\\;``,
is a word) and dequoted with :mod:`shlex`; unbalanced quotes fall back to plain splitting.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["Command", "command_of", "parse"]

MAX_CHARS = 4096  # longer commands are parsed on their opening only
MAX_KEY_CHARS = 300
MAX_CODE_CHARS = 200  # inline code (`python -c`, a heredoc) kept in a key
_MAX_DEPTH = 4  # nested `bash -c "bash -c ..."`


@dataclass(frozen=True, slots=True)
class Command:
    program: str  # the main program, basename ("cat", "python", "pytest"), "" if none
    files: tuple[str, ...]  # files, scripts and URLs touched, resolved against `cd X &&`, in order
    kind: str  # "read" (only reads or shows), "wait" (only sleeps) or "run"
    ranged: bool  # a read of a part of a file (a line range, a head, a tail)
    paced: bool  # the chain sleeps (N > 0) besides acting
    key: str  # what it does without what a loop varies: "read a.py", "pytest tests", "sleep"


def command_of(value: Any) -> str | None:
    """The command line in parsed JSON arguments: the string under ``command``/``cmd``/``script``,
    or an argv list (Codex's ``["bash", "-lc", "cat a.txt"]`` is ``cat a.txt``); else None."""
    if isinstance(value, dict):
        for name in ("command", "cmd", "script"):
            found = command_of(value.get(name)) if isinstance(value.get(name), list) else value.get(name)
            if isinstance(found, str) and found.strip():
                return found
        return None
    if isinstance(value, list) and value and all(isinstance(w, str) for w in value):
        if (len(value) >= 3 and _basename(value[0]) in _SHELLS and value[1].startswith("-")
                and "c" in value[1]):
            return value[2] if value[2].strip() else None
        return shlex.join(value)
    return None


def parse(command: str) -> Command:
    """The :class:`Command` of a shell command line; never raises (see the module rules)."""
    if not isinstance(command, str):
        return _EMPTY
    return _parse_cached(command[:MAX_CHARS])


@lru_cache(maxsize=4096)
def _parse_cached(command: str) -> Command:
    try:
        return _parse(command, "", 0)
    except Exception:  # noqa: BLE001 - a command the rules cannot read still gets a Command
        words = command.split()
        return Command(_basename(words[0]) if words else "", (), "run", False, False, " ".join(words[:2]))


_EMPTY = Command("", (), "run", False, False, "")

# --- lexing ----------------------------------------------------------------------------------

_OPS = ("&>>", "<<<", "<<-", ";;", "&&", "||", "|&", "&>", ">>", ">|", ">&", "<&", "<<", "<>",
        ";", "&", "|", ">", "<")
_OP_CHARS = frozenset(";&|<>")
_PLAIN = re.compile(r"[^\s\\'\"`$#(){};&|<>]+")  # a run of characters that mean nothing to the shell
_WORD = "w"
_OP = "op"
_DOC = "doc"  # a heredoc body


def _lex(text: str) -> list[tuple[str, str]]:
    """Words, operators and heredoc bodies, in order. Quotes, escapes, ``$(...)`` and backticks
    keep what they enclose in one word; a newline ends a step like ``;``; ``2>&1`` is dropped."""
    out: list[tuple[str, str]] = []
    word: list[str] = []
    quoted = False
    pending: list[str] = []  # heredoc delimiters waiting for the next newline
    i, n = 0, len(text)

    def flush() -> None:
        nonlocal quoted
        if word:
            out.append((_WORD, _dequote("".join(word))))
            word.clear()
        quoted = False

    while i < n:
        c = text[i]
        if c == "\\":
            if text[i + 1:i + 2] == "\n":
                i += 2
                continue
            word.append(text[i:i + 2])
            quoted, i = True, i + 2
        elif c in "'\"`":
            end = _closing(text, i)
            word.append(text[i:end])
            quoted, i = True, end
        elif c == "$" and text[i + 1:i + 2] in ("(", "{"):
            end = _balanced(text, i + 1)
            word.append(text[i:end])
            i = end
        elif c == "#" and not word:
            while i < n and text[i] != "\n":
                i += 1
        elif c == "\n":
            flush()
            i += 1
            for delimiter in pending:
                body, i = _heredoc(text, i, delimiter)
                out.append((_DOC, body))
            pending.clear()
            out.append((_OP, ";"))
        elif c.isspace():
            flush()
            i += 1
        elif c in "()" or (c in "{}" and not word and (i + 1 >= n or text[i + 1].isspace())):
            flush()  # subshells and groups: their steps are read as the chain's own
            out.append((_OP, ";"))
            i += 1
        elif c in _OP_CHARS:
            op = next(o for o in _OPS if text.startswith(o, i))
            if op[0] in "<>" and word and not quoted and "".join(word).isdigit():
                word.clear()  # a file descriptor: `2>err.txt`
            flush()
            i += len(op)
            if op in (">&", "<&"):
                j = i
                while j < n and (text[j].isdigit() or text[j] == "-"):
                    j += 1
                if j > i:  # `2>&1`, `>&-`: a descriptor duplicated, nothing touched
                    i = j
                    continue
                op = "&>"
            if op in ("<<", "<<-"):
                delimiter, i = _delimiter(text, i)
                pending.append(delimiter)
            out.append((_OP, op))
        else:
            plain = _PLAIN.match(text, i)
            word.append(plain.group() if plain else c)
            i = plain.end() if plain else i + 1
    flush()
    out.extend((_DOC, "") for _ in pending)  # a heredoc with no newline after its marker has no body
    return out


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
    while i < len(text) and text[i] in " \t":
        i += 1
    start = i
    while i < len(text) and not text[i].isspace() and text[i] not in _OP_CHARS:
        i = _closing(text, i) if text[i] in "'\"" else i + 1
    return _dequote(text[start:i]), i


def _heredoc(text: str, i: int, delimiter: str) -> tuple[str, int]:
    """The body of a heredoc starting at ``i`` and the index after its closing line."""
    lines = []
    while i < len(text):
        end = text.find("\n", i)
        end = len(text) if end == -1 else end
        line = text[i:end]
        i = end + 1
        if line.strip() == delimiter:
            return "\n".join(lines), i
        lines.append(line)
    return "\n".join(lines), len(text)


def _dequote(raw: str) -> str:
    if not any(c in raw for c in "'\"\\") or raw.startswith(("$(", "`")):
        return raw
    try:
        return " ".join(shlex.split(raw))
    except ValueError:  # unbalanced quotes: plain splitting
        return raw.replace("'", "").replace('"', "")


# --- structure: steps of pipelines of stages ---------------------------------------------------

_CHAIN = frozenset({";", "&&", "||", "&", ";;"})
_PIPE = frozenset({"|", "|&"})
_WRITE_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_NOT_WRITTEN = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})


@dataclass(slots=True)
class _Stage:
    words: list[str] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)
    doc: str | None = None  # heredoc or here-string fed to it


def _steps(tokens: list[tuple[str, str]]) -> list[list[_Stage]]:
    steps: list[list[_Stage]] = [[_Stage()]]
    redirect = ""
    docs: list[_Stage] = []
    for kind, text in tokens:
        stage = steps[-1][-1]
        if kind == _DOC:
            if docs:
                docs.pop(0).doc = text
        elif kind == _WORD:
            if redirect in _WRITE_OPS:
                if text not in _NOT_WRITTEN:
                    stage.writes.append(text)
            elif redirect == "<":
                stage.reads.append(text)
            elif redirect == "<<<":
                stage.doc = text
            else:
                stage.words.append(text)
            redirect = ""
        elif text in _CHAIN:
            steps.append([_Stage()])
        elif text in _PIPE:
            steps[-1].append(_Stage())
        elif text in ("<<", "<<-"):
            docs.append(stage)
        else:
            redirect = text
    return [[s for s in step if s.words or s.writes or s.reads] for step in steps]


# --- words -----------------------------------------------------------------------------------

_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,5}$")
_NUMBER = re.compile(r"^[+-]?\d+(\.\d+)?[smhdkKMG]?$")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_PYTHON = re.compile(r"^(python|pypy)(\d+(\.\d+)*)?[mtw]?$")


def _basename(word: str) -> str:
    return word.rstrip("/").rsplit("/", 1)[-1] if "/" in word.rstrip("/") else word


def _pathlike(word: str) -> bool:
    """A word that names a file by its shape: a slash or a file extension (not a URL, number, flag)."""
    if not word or word.startswith("-") or _URL.match(word) or any(c.isspace() for c in word):
        return False
    return "/" in word or bool(_EXTENSION.search(word))


def _resolve(path: str, cwd: str) -> str:
    """``path`` relative to the directory a ``cd`` moved to, normalised (``./a/`` is ``a``)."""
    if _URL.match(path):
        return path
    if not cwd or path.startswith(("/", "~", "$")):
        return posixpath.normpath(path) if path not in ("", "-") else path
    return posixpath.normpath(posixpath.join(cwd, path))


def _options(words: list[str], values: frozenset[str] = frozenset(),
             numbers: bool = True) -> tuple[list[str], list[tuple[str, str]]]:
    """(operands, [(flag, value)]) of ``words`` (the program excluded). A flag in ``values`` takes
    the next word (or what is attached: ``-n5``, ``--lines=5``); with ``numbers``, a number right
    after any other flag is that flag's value too (``--epochs 10``). After ``--`` all are operands."""
    operands: list[str] = []
    flags: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if word == "--":
            operands.extend(words[i:])
            break
        if not word.startswith("-") or word == "-" or _NUMBER.match(word) and word.startswith("+"):
            operands.append(word)
            continue
        name, value, takes = _flag(word, values)
        numeric = numbers and not value and i < len(words) and _NUMBER.match(words[i]) \
            and not words[i].startswith(("+", "-"))
        if i < len(words) and (takes or numeric):
            value, i = words[i], i + 1
        flags.append((name, value))
    return operands, flags


def _flag(word: str, values: frozenset[str]) -> tuple[str, str, bool]:
    """(name, attached value, whether it takes the next word)."""
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        return name, value, not eq and name in values
    if word[1:].isdigit():
        return word, word[1:], False  # `head -20`
    for at, letter in enumerate(word[1:], start=1):
        if "-" + letter in values:
            rest = word[at + 1:]
            return "-" + letter, rest, not rest
    return word, "", False


def _has(flags: list[tuple[str, str]], *names: str) -> bool:
    return any(name in names for name, _ in flags)


def _key(*parts: str) -> str:
    return " ".join(" ".join(p for p in parts if p).split())[:MAX_KEY_CHARS]


def _code(text: str) -> str:
    return " ".join(text.split())[:MAX_CODE_CHARS]


# --- stages ----------------------------------------------------------------------------------

@dataclass(slots=True)
class _Part:
    program: str
    files: list[str]
    kind: str = "run"
    key: str = ""
    reader: bool = False  # reads the content of its files: its key is "read <files>"
    ranged: bool = False  # picks a part of what it reads
    filter: bool = False  # only picks lines of its input (head, tail, sed -n 'A,Bp'): not in a key
    paced: bool = False


_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh"})
_SKIPPED = frozenset({"source", ".", "export", "set", "unset", "alias", "ulimit", "trap", "shopt",
                      "true", ":", "clear", "umask", "wait", "exit", "return", "fi", "done", "esac",
                      "for", "case", "then", "else", "do", "popd"})
_ACTIVATES = frozenset({"activate", "deactivate", "use", "shell", "local"})  # conda, nvm, pyenv
_BANNERS = frozenset({"echo", "printf"})
_KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "}"})


def _unwrap(words: list[str]) -> tuple[list[str], bool]:
    """The command a prefix runs (``FOO=1``, ``timeout 60``, ``nohup``, ``env``, ``uv run``,
    ``npx``, ``xargs``, ``watch -n 5`` ...) and whether one paced it (``watch``)."""
    paced = False
    for _ in range(8):
        while words and (_ASSIGNMENT.match(words[0]) or words[0] in _KEYWORDS):
            words = words[1:]
        if not words:
            break
        program = _basename(words[0])
        rest = _WRAPPERS.get(program)
        if program in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye") and words[1:2] == ["run"]:
            rest = frozenset({"--with", "--python", "-p", "--env", "-e", "--project", "--directory"})
            words = words[1:]
        if rest is None:
            break
        operands_at = _first_operand(words[1:], rest)
        if program == "timeout" and operands_at < len(words) - 1:
            operands_at += 1  # its duration
        paced = paced or program == "watch"
        words = [w for w in words[1 + operands_at:] if not (program == "env" and _ASSIGNMENT.match(w))]
    return words, paced


_WRAPPERS: dict[str, frozenset[str]] = {
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "time": frozenset({"-f", "-o"}), "nohup": frozenset(), "exec": frozenset(), "command": frozenset(),
    "builtin": frozenset(), "nice": frozenset({"-n"}), "ionice": frozenset({"-c", "-n"}),
    "stdbuf": frozenset({"-o", "-e", "-i"}), "env": frozenset({"-u", "-C", "-S"}),
    "sudo": frozenset({"-u", "-g", "-C", "-h"}), "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-E"}),
    "npx": frozenset({"-p", "--package", "-c"}), "watch": frozenset({"-n", "-d", "--interval"}),
    "caffeinate": frozenset(), "unbuffer": frozenset(),
}


def _first_operand(words: list[str], values: frozenset[str]) -> int:
    """The index of the first word after a prefix's own flags (and ``env``'s assignments)."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] == "--":
            return i + 1
        _, _, takes = _flag(words[i], values)
        i += 2 if takes else 1
    while i < len(words) and _ASSIGNMENT.match(words[i]):
        i += 1
    return min(i, len(words))


def _stage(stage: _Stage, cwd: str, depth: int) -> _Part:
    words, paced = _unwrap(stage.words)
    if words:
        program = _basename(words[0])
        family = "python" if _PYTHON.match(program) else program
        handler = _HANDLERS.get(family)
        if handler is None and "/" in words[0]:
            part = _script(words[0], words[1:], stage, cwd)
        else:
            part = (handler or _generic)(program, words[1:], stage, cwd, depth)
    else:
        part = _Part("", [], "read")
    part.paced = part.paced or paced
    writes = [_resolve(w, cwd) for w in stage.writes]
    part.files = _unique(part.files + [_resolve(w, cwd) for w in stage.reads] + writes)
    if writes:
        if part.program in ("cat", "echo", "printf") or not part.program:
            part.key = _key("write", *writes)
        else:
            part.key = _key(part.key, ">", *writes)
        part.kind, part.reader, part.ranged, part.filter = "run", False, False, False
    return part


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(i for i in items if i))


# A handler: (program, words after it, stage, cwd, depth) -> _Part.

_READER_VALUES = {
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
    "bat": frozenset({"-r", "--line-range", "-l", "--language", "-H", "--highlight-line", "--style", "--theme"}),
    "xxd": frozenset({"-s", "-l", "-c", "-g", "-o"}), "od": frozenset({"-j", "-N", "-A", "-t", "-w"}),
    "hexdump": frozenset({"-s", "-n", "-e", "-f"}), "strings": frozenset({"-n", "-t"}),
}
_READER_RANGES = {"bat": ("-r", "--line-range"), "xxd": ("-s", "-l"), "od": ("-j", "-N"), "hexdump": ("-s", "-n")}

def _reader(program, words, stage, cwd, depth) -> _Part:
    """cat, nl, less, more, bat ...: the content of files; a part with a range flag."""
    operands, flags = _options(words, _READER_VALUES.get(program, frozenset()), numbers=False)
    files = [_resolve(w, cwd) for w in operands if w != "-"]
    ranged = _has(flags, *_READER_RANGES.get(program, ()))
    if not files:
        return _Part(program, [], "read", program, filter=program in ("cat", "nl", "less", "more", "bat"))
    return _Part(program, files, "read", _key("read", *files), reader=True, ranged=ranged)


_HEAD_VALUES = frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--sleep-interval", "--pid",
                          "--max-unchanged-stats"})


def _head_tail(program, words, stage, cwd, depth) -> _Part:
    """head/tail: a part of a file when a count is given (``-n 40``, ``-20``, ``+30``)."""
    operands, flags = _options(words, _HEAD_VALUES, numbers=False)
    counted = [w for w in operands if w.startswith("+") and w[1:].isdigit()]
    files = [_resolve(w, cwd) for w in operands if w not in counted and w != "-"]
    ranged = bool(counted) or any(n in ("-n", "-c", "--lines", "--bytes") or n[1:].isdigit() for n, _ in flags)
    if not files:
        return _Part(program, [], "read", program, ranged=True, filter=True)
    return _Part(program, files, "read", _key("read", *files), reader=True, ranged=ranged)


# One sed command that prints lines by number (`5,9p`, `$p`, `10,+5p`), stops (`20q`) or prints a
# /start/,/end/ span: it picks lines, it changes none.
_LINE_PICK = re.compile(r"^\s*(?:(?:\d+|\$)(?:\s*,\s*(?:\d+|\$|[+~]\d+))?\s*[pq]|\d+\s*q"
                        r"|/[^/]*/\s*,\s*/[^/]*/\s*p)\s*$")


def _sed(program, words, stage, cwd, depth) -> _Part:
    """sed: ``-i`` writes; ``-n 'A,Bp'`` (or ``Nq``) reads a part; other scripts transform."""
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
    files = [_resolve(w, cwd) for w in operands if w != "-"]
    commands = [c for s in scripts for c in re.split(r"[;\n]", s) if c.strip()]
    picks = bool(commands) and all(_LINE_PICK.match(c) for c in commands) and (
        quiet or all(c.strip().endswith("q") for c in commands))
    if in_place:
        return _Part(program, files, "run", _key(program, *files))
    if not files:
        return _Part(program, [], "read", _key(program, *scripts), ranged=picks, filter=picks)
    if picks:
        return _Part(program, files, "read", _key("read", *files), reader=True, ranged=True)
    return _Part(program, files, "read", _key(program, *scripts, *files))


_NR = re.compile(r"\bF?NR\s*(==|>=|<=|>|<|!=)|(==|>=|<=|>|<|!=)\s*F?NR\b")
_AWK_WRITES = re.compile(r"\bsystem\s*\(|\bprintf?\b[^;}]*>|\|\s*getline|\bprint[^;}]*\|")


def _awk(program, words, stage, cwd, depth) -> _Part:
    """awk: ``NR`` conditions pick lines of a file; ``system()``/``print >`` and ``-i inplace`` write."""
    operands, flags = _options(words, frozenset({"-F", "-v", "-f", "-i", "--file", "--include"}), numbers=False)
    sources = [v for n, v in flags if n in ("-f", "--file")]
    script = "" if sources else (operands.pop(0) if operands else "")
    files = [_resolve(w, cwd) for w in sources + operands if w != "-" and not _ASSIGNMENT.match(w)]
    writes = bool(_AWK_WRITES.search(script)) or any(n == "-i" and v == "inplace" for n, v in flags)
    picks = bool(_NR.search(script)) and not re.search(r"\$[1-9]|\bEND\b", script)
    if writes:
        return _Part(program, files, "run", _key(program, _code(script), *files))
    if not operands and not sources:
        return _Part(program, [], "read", _key(program, _code(script)), ranged=picks, filter=picks)
    if picks:
        return _Part(program, files, "read", _key("read", *files), reader=True, ranged=True)
    return _Part(program, files, "read", _key(program, _code(script), *files))


_GREP_VALUES = {
    "grep": frozenset({"-e", "-f", "-m", "-A", "-B", "-C", "-d", "-D", "--regexp", "--file", "--max-count",
                       "--context", "--after-context", "--before-context", "--include", "--exclude",
                       "--exclude-dir", "--label", "--color", "--colour"}),
    "rg": frozenset({"-e", "-f", "-g", "-t", "-T", "-m", "-A", "-B", "-C", "-M", "-j", "-r", "--glob", "--type",
                     "--type-not", "--max-count", "--max-depth", "--context", "--iglob", "--replace",
                     "--regexp", "--file", "--max-filesize", "--sort", "--after-context", "--before-context",
                     "--max-columns", "--threads", "--color", "--colors"}),
    "ag": frozenset({"-A", "-B", "-C", "-G", "-m", "--ignore", "--depth", "--context"}),
}


def _grep(program, words, stage, cwd, depth) -> _Part:
    """grep/rg/ag: the pattern (first operand, unless ``-e``/``-f`` give it) stays in the key."""
    table = _GREP_VALUES["rg" if program == "rg" else "ag" if program in ("ag", "ack") else "grep"]
    operands, flags = _options(words, table, numbers=False)
    patterns = [v for n, v in flags if n in ("-e", "--regexp")]
    sources = [v for n, v in flags if n in ("-f", "--file")]
    if not patterns and not sources and operands:
        patterns.append(operands.pop(0))
    files = [_resolve(w, cwd) for w in sources + operands if w != "-"]
    return _Part(program, files, "read", _key(program, *patterns, *files))


_LISTERS = frozenset({"ls", "tree", "du", "stat", "file", "wc", "md5sum", "sha1sum", "sha256sum", "sha512sum",
                      "readlink", "realpath", "diff", "cmp", "sort", "uniq", "cut", "column", "fold", "test",
                      "[", "[[", "jq", "yq", "xmllint", "tac", "rev", "sum", "cksum", "dirname"})
_SHOWS = frozenset({"pwd", "which", "type", "whoami", "id", "uname", "date", "echo", "printf", "ps", "pgrep",
                    "env", "printenv", "hostname", "nproc", "free", "uptime", "df", "lsof", "history",
                    "basename", "locale", "groups", "tty", "w", "who", "seq", "expr", "cal", "true", "false"})
_VALUED_LISTERS = frozenset({"du", "tree", "sort", "cut", "jq", "yq", "column", "fold", "stat", "file", "uniq"})
_LIST_VALUES = frozenset({"-I", "-L", "-P", "-d", "--max-depth", "-c", "-k", "-t", "-f", "-o", "-w",
                          "--arg", "--argjson", "-F", "-i", "--ignore", "--format", "--printf"})


def _lister(program, words, stage, cwd, depth) -> _Part:
    """ls, wc, stat, diff, jq ...: they look at files (their operands) without reading them out."""
    operands, flags = _options(words, _LIST_VALUES if program in _VALUED_LISTERS else frozenset())
    if program in ("jq", "yq") and operands and not _has(flags, "-f", "--from-file"):
        query = operands.pop(0)
    else:
        query = ""
    operands = [w for w in operands if w not in ("]", "]]", "!", "=", "==", "!=")]
    files = [_resolve(w, cwd) for w in operands if w != "-"]
    kind = "run" if program == "sort" and _has(flags, "-o") else "read"
    return _Part(program, files, kind, _key(program, query, *files))


def _shows(program, words, stage, cwd, depth) -> _Part:
    """pwd, ps, date, echo ...: they show state, touch no file; their operands stay in the key."""
    operands, _ = _options(words)
    if program in _BANNERS:
        operands = []  # the text shown varies, what it does does not
    return _Part(program, [], "read", _key(program, *operands))


_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _find(program, words, stage, cwd, depth) -> _Part:
    """find: the paths before its expression; ``-delete`` or ``-exec`` of a writer make it a run."""
    at = next((i for i, w in enumerate(words) if w.startswith(("-", "(", "!"))), len(words))
    paths, expression = words[:at], words[at:]
    files = [_resolve(w, cwd) for w in paths]
    kind = "read"
    if "-delete" in expression or "-fprint" in expression:
        kind = "run"
    for i, word in enumerate(expression):
        if word in _FIND_ACTIONS and i + 1 < len(expression):
            inner = _basename(expression[i + 1])
            if inner not in _READS:
                kind = "run"
    shown = [w for w in expression if not w.startswith("-") and w not in ("{}", ";", "+", "(", ")", "!")]
    return _Part(program, files, kind, _key(program, *files, *shown))


_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "grep", "shortlog",
                        "describe", "reflog", "cat-file", "ls-tree", "whatchanged", "annotate", "ls-remote",
                        "rev-list", "show-ref", "name-rev", "count-objects", "version", "help"})
_GIT_LISTS = frozenset({"branch", "tag", "remote", "submodule"})  # bare: a listing
_GIT_TOP = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})
_GIT_VALUES = frozenset({"-n", "-m", "-F", "-b", "-B", "-L", "--max-count", "--author", "--since", "--until",
                         "--grep", "--format", "--pretty", "-U", "--unified", "--skip", "-S", "-G", "-e", "-f",
                         "--message", "--file", "--date", "-A", "-C", "--context"})


def _git(program, words, stage, cwd, depth) -> _Part:
    """git: its subcommand; status, log, diff, show, blame ... and bare listings read."""
    i = 0
    while i < len(words) and words[i].startswith("-"):
        name, value, takes = _flag(words[i], _GIT_TOP)
        if name == "-C" and (takes or value):
            cwd = _resolve(value or (words[i + 1] if i + 1 < len(words) else "."), cwd)
        i += 2 if takes else 1
    if i >= len(words):
        return _Part(program, [], "read", program)
    sub, rest = words[i], words[i + 1:]
    if sub == "grep":
        part = _grep("git grep", rest, stage, cwd, depth)
        return _Part(program, part.files, "read", _key("git", part.key))
    operands, flags = _options(rest, _GIT_VALUES)
    explicit = rest[rest.index("--") + 1:] if "--" in rest else []
    paths = [w for w in operands if w in explicit or (":" not in w and ".." not in w and _git_path(w))]
    files = [_resolve(w, cwd) for w in paths]
    shown = [_resolve(w, cwd) if w in paths else w for w in operands]
    listing = (sub in _GIT_LISTS and not operands) or (operands[:1] in (["list"], ["show"]) and sub in (
        "stash", "worktree", "remote"))
    reads = sub in _GIT_READS or (listing and not _has(flags, "-d", "-D", "--delete", "-m", "-M", "-c", "-C"))
    return _Part(program, files, "read" if reads else "run", _key(program, sub, *shown))


def _git_path(word: str) -> bool:
    """A git operand that is a path, not a ref (``origin/main`` is a ref, ``src/`` a path)."""
    return bool(_EXTENSION.search(word)) or word.endswith("/") or word.startswith(("./", "/", "../", "~"))


_PY_VALUES = frozenset({"-m", "-c", "-W", "-X", "-Q"})


def _python(program, words, stage, cwd, depth) -> _Part:
    """python: ``-m M`` runs the program M (``python -m pytest`` is ``pytest``); ``-c`` code and a
    heredoc are kept in the key; else the script is the target."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        name, value, takes = _flag(words[i], _PY_VALUES)
        value = words[i + 1] if takes and i + 1 < len(words) else value
        i += 2 if takes else 1
        if name == "-m" and value:
            module = _stage(_Stage([value, *words[i:]], [], [], stage.doc), cwd, depth)
            return module
        if name == "-c":
            return _inline("python", words[i:], stage, cwd, f"-c {_code(value)}")
    return _interpreter("python", words[i:], stage, cwd)


def _inline(family: str, args: list[str], stage: _Stage, cwd: str, code: str) -> _Part:
    operands, _ = _options(args)
    files = [_resolve(w, cwd) for w in operands if _pathlike(w)]
    return _Part(family, files, "run", _key(family, code, *(_resolve(w, cwd) if w in files else w for w in operands)))


def _interpreter(family: str, words: list[str], stage: _Stage, cwd: str) -> _Part:
    """A script run by an interpreter: the script and its path-like arguments are touched."""
    if not words or words[0] == "-":
        code = f"<<{_code(stage.doc)}" if stage.doc else ""
        return _inline(family, words[1:], stage, cwd, code)
    script = _resolve(words[0], cwd)
    operands, _ = _options(words[1:])
    files = [script] + [_resolve(w, cwd) for w in operands if _pathlike(w)]
    shown = [_resolve(w, cwd) if _pathlike(w) else w for w in operands]
    return _Part(family, files, "run", _key(family, script, *shown))


_EVAL_FLAGS = frozenset({"-e", "--eval", "-p", "--print", "-c", "-E", "-r"})


def _node_like(program, words, stage, cwd, depth) -> _Part:
    """node, ruby, perl, php, tsx ...: ``-e`` code in the key, else the script."""
    i = 0
    while i < len(words) and words[i].startswith("-") and words[i] != "-":
        if words[i] in _EVAL_FLAGS and i + 1 < len(words):
            return _inline(program, words[i + 2:], stage, cwd, f"-e {_code(words[i + 1])}")
        i += 1
    return _interpreter(program, words[i:], stage, cwd)


def _shell(program, words, stage, cwd, depth) -> _Part:
    """bash/sh: ``-c "..."`` is parsed as a command of its own; a script file is its key."""
    i = 0
    while i < len(words) and words[i].startswith(("-", "+")) and words[i] != "-":
        if "c" in words[i][1:] and not words[i].startswith("--") and i + 1 < len(words):
            if depth >= _MAX_DEPTH:
                return _Part(program, [], "run", program)
            inner = _parse(words[i + 1][:MAX_CHARS], cwd, depth + 1)
            return _Part(inner.program, list(inner.files), inner.kind, inner.key, reader=inner.key.startswith("read "),
                         ranged=inner.ranged, paced=inner.paced)
        i += 2 if words[i] in ("-o", "+o", "--rcfile", "--init-file") else 1
    words = words[i:]
    if not words or words[0] == "-":
        return _Part(program, [], "run", _key(program, f"<<{_code(stage.doc)}" if stage.doc else ""))
    part = _interpreter(program, words, stage, cwd)
    part.key = part.key.split(" ", 1)[1]  # `bash run.sh` is `./run.sh`
    return part


def _script(word: str, words: list[str], stage: _Stage, cwd: str) -> _Part:
    """``./run.sh``, ``bin/test``: the program is a file of the project, itself the target."""
    part = _interpreter(_basename(word), [word, *words], stage, cwd)
    part.key = part.key.split(" ", 1)[1]
    return part


_PYTEST_VALUES = frozenset({"-k", "-m", "-p", "-c", "-o", "-W", "-n", "-r", "--tb", "--maxfail", "--durations",
                            "--rootdir", "--deselect", "--ignore", "--ignore-glob", "--log-level", "--junitxml",
                            "--basetemp", "--confcutdir", "--cov-report", "--timeout", "--count", "--import-mode",
                            "--log-cli-level", "--dist", "--color", "--capture", "--override-ini"})


def _pytest(program, words, stage, cwd, depth) -> _Part:
    """pytest: its operands are test paths (``tests/``, ``./tests`` and ``tests`` are one)."""
    operands, _ = _options(words, _PYTEST_VALUES, numbers=False)
    files = [_resolve(w, cwd) for w in operands]
    return _Part("pytest", files, "run", _key("pytest", *files))


_WRITER_VALUES = frozenset({"-m", "-s", "-t", "-S", "--suffix", "--target-directory", "--mode", "--size",
                            "--reference", "--backup"})


def _writer(program, words, stage, cwd, depth) -> _Part:
    """touch, rm, cp, mv, tee, chmod ...: every operand is a file they change."""
    operands, _ = _options(words, _WRITER_VALUES, numbers=False)
    if program in ("chmod", "chown", "chgrp") and operands:
        operands = operands[1:]  # the mode or the owner
    files = [_resolve(w, cwd) for w in operands if w != "-"]
    return _Part(program, files, "run", _key(program, *files))


_FETCH_VALUES = {
    "curl": frozenset({"-X", "-H", "-d", "-o", "-u", "-A", "-e", "-m", "-w", "-b", "-c", "-F", "-T", "-x", "-K", "-r",
                       "--data", "--data-raw", "--data-binary", "--data-urlencode", "--json", "--max-time",
                       "--connect-timeout", "--retry", "--header", "--request", "--output", "--user", "--config",
                       "--cert", "--key", "--cacert", "--resolve", "--limit-rate", "--user-agent", "--form"}),
    "wget": frozenset({"-O", "-P", "-o", "-t", "-T", "-a", "-e", "--header", "--output-document",
                       "--directory-prefix", "--output-file", "--tries", "--timeout", "--user", "--password"}),
}
_OUTPUTS = frozenset({"-o", "-O", "--output", "--output-document", "-T"})


def _fetch(program, words, stage, cwd, depth) -> _Part:
    """curl, wget: the URL is the target (files named by ``-o``/``-O`` are written)."""
    values = _FETCH_VALUES.get(program, _FETCH_VALUES["curl"])
    operands, flags = _options(words, values, numbers=False)
    outputs = [_resolve(v, cwd) for n, v in flags if n in _OUTPUTS and n in values and v and v != "-"]
    return _Part(program, operands + outputs, "run", _key(program, *operands))


def _generic(program, words, stage, cwd, depth) -> _Part:
    """Any other program: its operands (subcommands, targets) without flags and numeric flag
    values; the path-like ones are the files it touches."""
    operands, flags = _options(words)
    operands = [w for w in operands if not w.startswith("-") or w == "-"]  # `npm test -- --watch`
    files = [_resolve(w, cwd) for w in operands if _pathlike(w)]
    files += [_resolve(v, cwd) for _, v in flags if _pathlike(v)]
    shown = [_resolve(w, cwd) if _pathlike(w) else w for w in operands]
    return _Part(program, files, "run", _key(program, *shown))


_READERS = frozenset({"cat", "nl", "less", "more", "bat", "batcat", "xxd", "hexdump", "od", "strings", "zcat",
                      "zless", "tac"})
_FILE_RUNS = frozenset({"touch", "rm", "rmdir", "mkdir", "cp", "mv", "ln", "tee", "unlink", "shred", "chmod",
                        "chown", "chgrp", "install", "truncate", "vim", "vi", "nano", "emacs", "code", "patch",
                        "tar", "unzip", "zip", "gzip", "gunzip", "dos2unix"})
_HANDLERS = {
    **dict.fromkeys(_READERS, _reader), "head": _head_tail, "tail": _head_tail,
    "sed": _sed, "gsed": _sed, **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk),
    **dict.fromkeys(("grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack"), _grep),
    **dict.fromkeys(_LISTERS - _READERS, _lister), **dict.fromkeys(_SHOWS, _shows), "find": _find, "git": _git,
    "python": _python, **dict.fromkeys(("node", "ruby", "perl", "php", "tsx", "ts-node", "Rscript", "lua"), _node_like),
    **dict.fromkeys(_SHELLS, _shell), "pytest": _pytest, "py.test": _pytest,
    **dict.fromkeys(("curl", "wget", "http", "https", "xh"), _fetch), **dict.fromkeys(_FILE_RUNS, _writer),
}
_READS = frozenset({"cat", "head", "tail", "sed", "awk", "grep", "egrep", "rg", "ag"}) | _READERS | _LISTERS | _SHOWS


# --- pipelines and chains --------------------------------------------------------------------

def _pipeline(stages: list[_Stage], cwd: str, depth: int) -> _Part:
    """``a | b | c``: the first stage naming a file is the main one; filters that only pick
    lines (``head``, ``sed -n 'A,Bp'``) or pass them on (``cat``) stay out of the key."""
    parts = [_stage(s, cwd, depth) for s in stages]
    if len(parts) == 1:
        return parts[0]
    main = next((p for p in parts if p.files), parts[0])
    ranged = main.reader and (main.ranged or any(p.filter and p.ranged for p in parts if p is not main))
    return _Part(main.program, _unique([f for p in parts for f in p.files]),
                 "read" if all(p.kind == "read" for p in parts) else "run",
                 " | ".join(p.key for p in parts if p is main or not p.filter)[:MAX_KEY_CHARS],
                 reader=main.reader, ranged=ranged, paced=any(p.paced for p in parts))


def _parse(text: str, cwd: str, depth: int) -> Command:
    """A chain ``a && b; c || d``: its main step is the last one that is not set-up (``cd``,
    ``sleep``, ``source``, ``export``, an ``echo`` banner ...); files from all steps."""
    parts: list[_Part] = []
    paced = slept = False
    banner: _Part | None = None
    last = ""
    for pipeline in _steps(_lex(text)):
        if not pipeline:
            continue
        first = pipeline[0]
        if len(pipeline) == 1 and not first.writes and not first.reads:
            words, _ = _unwrap(first.words)
            program = _basename(words[0]) if words else ""
            last = program or last
            if program in ("cd", "pushd"):
                cwd = _cd(words[1:], cwd)
                continue
            if program == "sleep":
                slept, paced = True, paced or _positive(words[1:])
                continue
            if not words or program in _SKIPPED or (program in ("conda", "nvm", "pyenv", "mamba")
                                                     and words[1:2] and words[1] in _ACTIVATES):
                continue
            if program in _BANNERS:
                banner = _stage(first, cwd, depth)
                continue
        parts.append(_pipeline(pipeline, cwd, depth))
    if not parts and slept:
        return Command("sleep", (), "wait", False, paced, "sleep")
    if not parts and banner is None:
        return Command(last, (), "run", False, False, last)
    parts = parts or [banner]
    main = parts[-1]
    # A command substitution runs something the words do not show: never only a read.
    substituted = "$(" in text or "`" in text
    return Command(
        program=main.program,
        files=tuple(_unique([f for p in parts for f in p.files])),
        kind="read" if all(p.kind == "read" for p in parts) and not substituted else "run",
        ranged=main.reader and main.ranged,
        paced=paced or any(p.paced for p in parts),
        key=main.key,
    )


def _cd(words: list[str], cwd: str) -> str:
    operands = [w for w in words if not w.startswith("-") or w == "-"]
    if not operands or operands[0] == "~":
        return "~"
    return cwd if operands[0] == "-" else _resolve(operands[0], cwd)


_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)[smhd]?$")


def _positive(words: list[str]) -> bool:
    """Whether ``sleep`` with these operands waits at all (``sleep 0`` does not; ``$T`` may)."""
    operands = [w for w in words if not w.startswith("-")]
    if not operands:
        return False
    found = _DURATION.match(operands[0])
    return float(found.group(1)) > 0 if found else True
