"""Recorded request bodies read as runs, for callers that hand replay files of bodies:
``read_files`` reads each file as the request-body format (``gateway.replay.logs.bodies``) and
lists the lines it could not read instead of stopping."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from gateway.replay.logs import LogError, Source
from gateway.replay.logs import bodies as request_bodies
from gateway.replay.run import Run


@dataclass(slots=True)
class Reading:
    conversations: list[Run]
    bodies: int  # bodies read, before merging growing ones
    problems: list[str]  # "file: why" and "file:line: why", for what was skipped


def read_files(paths: Iterable[str | Path]) -> Reading:
    runs: list[Run] = []
    problems: list[str] = []
    bodies = 0
    for path in paths:
        source = Source(Path(path), Path(path).name)
        try:
            found, skipped = request_bodies.recorded(source, None)
        except LogError as exc:
            problems.append(f"{path}: {exc}")
            continue
        bodies += len(found)
        problems += [f"{path}:{why}" for why in skipped]
        runs += request_bodies.runs(source, found)
    return Reading(runs, bodies, problems)
