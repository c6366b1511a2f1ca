"""The files a replay reads, from what the operator typed: files, folders and globs.

A file named on the command line is read whatever its name, and when it is no log replay reads
that is an error. A folder is walked for ``*.jsonl`` and ``*.json`` files (and OpenHands'
``events/`` folders, each one log); there a file that no format claims (a client's settings, its
caches) is skipped and counted, not an error. Each log is named by its path relative to the
argument it was found under: the key a labels file uses.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from gateway.replay.logs import Source
from gateway.replay.logs.base import COMPRESSED

SUFFIXES = tuple(s + c for s in (".jsonl", ".json") for c in ("", *COMPRESSED))
_GLOB = frozenset("*?[")


@dataclass(slots=True)
class Found:
    sources: list[Source] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # arguments that name nothing


def find(arguments: list[str]) -> Found:
    found = Found()
    seen: set[Path] = set()
    for argument in arguments:
        expanded = os.path.expanduser(argument)
        if _GLOB & set(expanded):
            matches = sorted(glob.glob(expanded, recursive=True))
            root = Path(_glob_root(expanded))
            if not matches:
                found.missing.append(argument)
            for match in matches:
                _add(found, seen, Path(match), root, explicit=Path(match).is_file())
        elif Path(expanded).exists():
            path = Path(expanded)
            _add(found, seen, path, path if path.is_dir() else path.parent, explicit=True)
        else:
            found.missing.append(argument)
    return found


def _add(found: Found, seen: set[Path], path: Path, root: Path, explicit: bool) -> None:
    if path.is_dir() and path.name != "events":
        for child in _walk(path):
            _once(found, seen, child, root, explicit=False)
    else:
        _once(found, seen, path, root, explicit=explicit)


def _once(found: Found, seen: set[Path], path: Path, root: Path, explicit: bool) -> None:
    resolved = path.resolve()
    if resolved in seen:
        return
    seen.add(resolved)
    found.sources.append(Source(path, _relative(path, root), explicit))


def _walk(folder: Path) -> list[Path]:
    """Log files and ``events/`` folders under ``folder``, in a stable order."""
    out: list[Path] = []
    for directory, children, files in os.walk(folder):
        children.sort()
        here = Path(directory)
        if here.name == "events" and any(f.endswith(".json") for f in files):
            out.append(here)
            children.clear()  # its files are one log
            continue
        out += [here / f for f in sorted(files) if f.endswith(SUFFIXES)]
    return out


def _relative(path: Path, root: Path) -> str:
    try:
        rel = path.relative_to(root).as_posix()
    except ValueError:
        rel = path.as_posix()
    return rel if rel not in ("", ".") else path.name


def _glob_root(pattern: str) -> str:
    """The folders of ``pattern`` before its first wildcard: where its matches are found under."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts[:-1]:
        if _GLOB & set(part):
            break
        fixed.append(part)
    return str(Path(*fixed)) if fixed else "."
