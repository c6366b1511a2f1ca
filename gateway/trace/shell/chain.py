"""Chains and pipelines: which step and stage is the main one, and what the whole touches.

The main step of ``a && b; c`` is its last step that is not set-up (``cd``, ``source``,
``export``, ``sleep``, an ``echo`` banner); within ``a | b`` it is the first stage that names a
file (the others filter its output), else the first stage. Every stage is read by its program's
handler; a stage that runs another command (``python -m``, ``bash -c``) is read as that command,
which makes this module the only recursive one.
"""

from __future__ import annotations

from .command import MAX_CHARS, MAX_KEY_CHARS, Command
from .lex import lex
from .part import Part, Runs
from .prefixes import unwrap
from .programs import handle
from .programs.lists import BANNERS
from .setup_steps import cd, positive, skipped
from .steps import Stage, steps
from .words import basename, key, resolve, unique

_MAX_DEPTH = 4  # nested `bash -c "bash -c ..."`


def parse_chain(text: str, cwd: str, depth: int) -> Command:
    """A chain ``a && b; c || d``: its main step is the last one that is not set-up (``cd``,
    ``sleep``, ``source``, ``export``, an ``echo`` banner ...); files from all steps."""
    parts: list[Part] = []
    paced = slept = False
    banner: Part | None = None
    last = ""
    for pipeline in steps(lex(text)):
        if not pipeline:
            continue
        first = pipeline[0]
        if len(pipeline) == 1 and not first.writes and not first.reads:
            words, _ = unwrap(first.words)
            program = basename(words[0]) if words else ""
            last = program or last
            if program in ("cd", "pushd"):
                cwd = cd(words[1:], cwd)
                continue
            if program == "sleep":
                slept, paced = True, paced or positive(words[1:])
                continue
            if skipped(program, words):
                continue
            if program in BANNERS:
                banner = stage_part(first, cwd, depth)
                continue
        parts.append(_pipeline(pipeline, cwd, depth))
    if not parts and slept:
        return Command("sleep", (), "wait", False, paced, "sleep")
    if not parts:
        if banner is None:
            return Command(last, (), "run", False, False, last)
        parts = [banner]
    # A command substitution runs something the words do not show: never only a read.
    return _command(parts, paced, "$(" in text or "`" in text)


def _command(parts: list[Part], paced: bool, substituted: bool) -> Command:
    """The chain of these steps: the last is the main one; files from all of them."""
    main = parts[-1]
    return Command(
        program=main.program,
        files=tuple(unique([f for p in parts for f in p.files])),
        kind="read" if all(p.kind == "read" for p in parts) and not substituted else "run",
        ranged=main.reader and main.ranged,
        paced=paced or any(p.paced for p in parts),
        key=main.key,
    )


def _pipeline(stages: list[Stage], cwd: str, depth: int) -> Part:
    """``a | b | c``: the first stage naming a file is the main one; filters that only pick
    lines (``head``, ``sed -n 'A,Bp'``) or pass them on (``cat``) stay out of the key."""
    parts = [stage_part(s, cwd, depth) for s in stages]
    if len(parts) == 1:
        return parts[0]
    main = next((p for p in parts if p.files), parts[0])
    ranged = main.reader and (main.ranged or any(p.filter and p.ranged for p in parts if p is not main))
    return Part(
        main.program,
        unique([f for p in parts for f in p.files]),
        "read" if all(p.kind == "read" for p in parts) else "run",
        " | ".join(p.key for p in parts if p is main or not p.filter)[:MAX_KEY_CHARS],
        reader=main.reader,
        ranged=ranged,
        paced=any(p.paced for p in parts),
    )


def stage_part(stage: Stage, cwd: str, depth: int) -> Part:
    """One stage: what the program its prefixes run does, plus its redirections."""
    words, paced = unwrap(stage.words)
    part = _nested(handle(words, stage, cwd), cwd, depth) if words else Part("", [], "read")
    part.paced = part.paced or paced
    return _redirected(part, stage, cwd)


def _nested(found: Part | Runs, cwd: str, depth: int) -> Part:
    """A stage that runs another command does what that command does: ``python -m M``'s stage,
    ``bash -c``'s chain (read at most ``_MAX_DEPTH`` deep, then only a run of the shell)."""
    if isinstance(found, Part):
        return found
    if found.stage is not None:
        return stage_part(found.stage, cwd, depth)
    if depth >= _MAX_DEPTH:
        return Part(found.program, [], "run", found.program)
    inner = parse_chain(found.text[:MAX_CHARS], cwd, depth + 1)
    return Part(
        inner.program,
        list(inner.files),
        inner.kind,
        inner.key,
        reader=inner.key.startswith("read "),
        ranged=inner.ranged,
        paced=inner.paced,
    )


def _redirected(part: Part, stage: Stage, cwd: str) -> Part:
    """Files a stage reads (``<``) or writes (``>``) are touched; writing makes it a run, never a
    read, keyed ``write <files>`` for ``cat``/``echo`` (or nothing) and else ``<key> > <files>``."""
    writes = [resolve(w, cwd) for w in stage.writes]
    part.files = unique(part.files + [resolve(w, cwd) for w in stage.reads] + writes)
    if writes:
        if part.program in ("cat", "echo", "printf") or not part.program:
            part.key = key("write", *writes)
        else:
            part.key = key(part.key, ">", *writes)
        part.kind, part.reader, part.ranged, part.filter = "run", False, False, False
    return part
