"""Every agent run the test fixtures hold, as the request bodies its agent sends.

A run is its last request body (the whole conversation, in its protocol's wire format): the
request before each of the model's messages is that body's conversation up to it, as
``loopguard replay`` reads it (``gateway.replay.run.Segment``). The runs:

- the scripts (``support.classes``' loops and healthy look-alikes with the agent that speaks
  each, ``support.varying``'s, and every script the detector tests write: a module-level
  function or constant of ``tests/detectors/*`` that gives one), each in the four wire formats;
- the recorded sessions of the real coding-agent CLIs and their recorded scenario runs
  (``support.recorded``), in the protocol and route each client used;
- the development corpus (``../shared/corpus/runs.jsonl.xz``; ``LOOPGUARD_CORPUS`` names another
  copy): 238 real agents' runs, in chat completions.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import lzma
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support import classes, varying
from support.bodies import BODIES, PROTOCOLS
from support.process import ROOT
from support.recorded import Wire, recordings, scenario_runs

CORPUS = Path(os.environ.get("LOOPGUARD_CORPUS") or ROOT.parent / "shared" / "corpus" / "runs.jsonl.xz")
DETECTOR_TESTS = ROOT / "tests" / "detectors"
SYSTEM = "You are a helpful agent."  # what tests/detectors/runs.py judges scripts with


@dataclass(frozen=True)
class FixtureRun:
    name: str
    protocol: str  # the adapter's name (gateway.protocols.registry.BY_NAME)
    body: dict[str, Any]  # the run's last request: its whole conversation
    headers: dict[str, str] = field(default_factory=dict)  # what the client sends besides its body
    path: str | None = None  # the route it posts to (None: its protocol's first)


@dataclass(frozen=True)
class Script:
    name: str
    steps: list[Any]
    tools: tuple[str, ...] | None = None  # declared by the agent that speaks it
    system: str = SYSTEM


# --- the scripts -----------------------------------------------------------------------------


def scripts() -> list[Script]:
    """Every script of the fixtures, each once (the first name it was found under)."""
    found: dict[str, Script] = {}

    def add(name: str, steps: list[Any], tools: tuple[str, ...] | None = None, system: str = SYSTEM) -> None:
        key = json.dumps(steps, sort_keys=True, default=str)
        found.setdefault(key, Script(name, steps, tools, system))

    for group in (classes.LOOPS, classes.HEALTHY):
        for name, case in group.items():
            add(f"classes: {name}", case.script(), case.speaker.tools, case.speaker.system)
    for name, steps in _module_scripts(varying):
        add(f"varying: {name}", steps)
    for path in sorted(DETECTOR_TESTS.glob("*.py")):
        for name, steps in _module_scripts(_load(path)):
            add(f"{path.stem}: {name}", steps)
    return list(found.values())


def script_runs(protocol: str) -> list[FixtureRun]:
    return [
        FixtureRun(f"{protocol}: {s.name}", protocol, BODIES[protocol](s.steps, s.tools, s.system)) for s in scripts()
    ]


def _load(path: Path) -> Any:
    """A detector test module, imported under a name of its own (its helpers beside it)."""
    if str(DETECTOR_TESTS) not in sys.path:
        sys.path.insert(0, str(DETECTOR_TESTS))
    spec = importlib.util.spec_from_file_location(f"_fixture_scripts_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_scripts(module: Any) -> Iterator[tuple[str, list[Any]]]:
    """The scripts a module gives: module-level functions callable without arguments (and
    constants, or the functions they list) whose value is a script."""
    for name, value in vars(module).items():
        if name.startswith(("_", "test")):
            continue
        if _script(value):
            yield name, value
        elif isinstance(value, dict | list | tuple) and not _script(value):
            members = value.items() if isinstance(value, dict) else enumerate(value)
            for key, member in members:
                steps = _called(member, module) if callable(member) else member
                if _script(steps):
                    yield f"{name}[{key}]", steps
        elif callable(value):
            steps = _called(value, module)
            if _script(steps):
                yield name, steps


def _called(function: Callable[..., Any], module: Any) -> Any:
    if getattr(function, "__module__", None) != module.__name__ or not inspect.isfunction(function):
        return None
    try:
        required = [p for p in inspect.signature(function).parameters.values() if p.default is p.empty]
    except (TypeError, ValueError):
        return None
    return function() if not required else None


def _script(value: Any) -> bool:
    """A script: user messages (strings), calls ``(tool, args, result)`` and rounds (lists of
    calls), with one call at least."""
    if not isinstance(value, list) or not value:
        return False
    return all(isinstance(item, str) or _round(item) for item in value) and any(not isinstance(i, str) for i in value)


def _round(item: Any) -> bool:
    return _call(item) or (isinstance(item, list) and bool(item) and all(map(_call, item)))


def _call(item: Any) -> bool:
    return (
        isinstance(item, tuple)
        and len(item) == 3
        and isinstance(item[0], str)
        and isinstance(item[1], dict | str)
        and isinstance(item[2], str)
    )


# --- the recorded sessions -------------------------------------------------------------------


_PROTOCOL = {"chat": "chat", "anthropic": "anthropic", "responses": "responses", "gemini": "gemini"}


def recorded_runs() -> list[FixtureRun]:
    """Each client version's recorded session, and each scenario it ran."""
    out = []
    for recording in recordings():
        out.append(_recorded(recording.name, recording.wire, recording.body, recording.headers, recording.path))
    for scenario in scenario_runs():
        recording = scenario.recording
        head, _ = recording.parts()
        body = recording.wire.body(recording.body, head, scenario.rounds)
        out.append(_recorded(scenario.id, recording.wire, body, recording.headers, recording.path))
    return out


def _recorded(name: str, wire: Wire, body: dict[str, Any], headers: dict[str, str], path: str) -> FixtureRun:
    return FixtureRun(f"recorded: {name}", _PROTOCOL[wire.name], body, {**headers, **wire.auth()}, path.split("?")[0])


# --- the development corpus ------------------------------------------------------------------


def corpus_runs() -> list[FixtureRun]:
    """The corpus's runs (none when it is not there)."""
    if not CORPUS.exists():
        return []
    out = []
    with lzma.open(CORPUS, "rt", encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            run = json.loads(line)
            body = {"model": run["id"], "messages": run["messages"]}
            if run.get("tools"):
                body["tools"] = run["tools"]
            out.append(FixtureRun(f"corpus: {run['id']}", "chat", body))
    return out


__all__ = ["CORPUS", "PROTOCOLS", "FixtureRun", "Script", "corpus_runs", "recorded_runs", "script_runs", "scripts"]
