"""Metamorphic tests: what a run means does not change with how it is written, so neither may
the gateway's verdict. One table of transformations applied to every looping and healthy
fixture of tests/support (classes.py, the classes real agents' sessions showed; varying.py, the
loops that vary and their look-alikes):

- the spelling of paths, the quoting of a command's files, volatile values in arguments and
  results, another release's result envelope, the four protocols: a loop stays stopped (a loop
  only warned stays warned), a healthy run is never stopped, and a quiet one stays quiet;
- batching: a look at another file issued in the same round as each call, or in a round of its
  own right after it (the calls of a round were chosen before any of their results), gives one
  verdict (the looks are new information either way, so that verdict may be weaker than the
  run's own).

Each run is judged through the server's own request and response paths on its protocol
(runs.replayed); transformations with a random part draw it from hypothesis."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from runs import replayed
from support import classes, varying
from support.bodies import PROTOCOLS

Script = list[Any]
NONE, WARNED, STOPPED = 0, 1, 2


def level(first: dict[str, tuple[int, str]]) -> int:
    return STOPPED if {"reject", "terminate"} & first.keys() else WARNED if first else NONE


def _generic(script: Callable[[], Script]) -> classes.Case:
    """A fixture written for no agent in particular: the tools it calls are the ones declared."""
    tools = tuple(sorted({s[0] for s in varying_steps(script())}))
    return classes.Case(script, classes.Speaker("generic", tools, "You are a helpful agent."))


def varying_steps(script: Script) -> list[tuple]:
    return [s for item in script if not isinstance(item, str) for s in (item if isinstance(item, list) else [item])]


FIXTURES: dict[str, classes.Case] = {
    **{f"loop: {n}": c for n, c in classes.LOOPS.items()},
    **{f"healthy: {n}": c for n, c in classes.HEALTHY.items()},
    **{f"loop: {n}": _generic(f) for n, (f, _) in varying.LOOPS.items()},
    **{f"healthy: {n}": _generic(f) for n, f in varying.HEALTHY.items()},
}


def verdict(case: classes.Case, script: Script, protocol: str = "chat") -> int:
    return level(replayed(script, protocol=protocol, **case.speaker.kwargs()))


def holds(original: int, transformed: int, loop: bool) -> bool:
    if loop:
        return transformed >= original
    return transformed <= original


# --- transformations ------------------------------------------------------------------------------

_PATH = re.compile(r"(?<![\w./-])((?:/[\w.-]+)+/[\w.-]+\.\w+|[\w-]+(?:/[\w.-]+)+\.\w+)")


def respelled(script: Script, rng: random.Random, cwd: str) -> Script:
    """Each path in a call's arguments spelled another way: relative, with ``./``, or, when the
    agent states its working directory ``cwd``, absolute under it (the same file each time)."""

    def spell(match: re.Match[str]) -> str:
        path = match.group(1)
        bare = path[len(cwd) + 1 :] if cwd and path.startswith(cwd + "/") else path
        if bare.startswith("/"):
            return path  # outside the working directory: one spelling only
        return rng.choice([bare, f"./{bare}", *([f"{cwd}/{bare}"] if cwd else [])])

    return _map_args(script, lambda text: _PATH.sub(spell, text))


def quoted(script: Script, rng: random.Random) -> Script:
    """A shell command's file operands quoted, single or double, or not."""

    def quote(match: re.Match[str]) -> str:
        return rng.choice(["{}", "'{}'", '"{}"']).format(match.group(1))

    def command(text: str) -> str:
        return re.sub(r"(?<=\s)([\w./-]+\.\w+)(?=\s|$)", quote, text)

    return _map_values(script, {"command", "cmd"}, command)


def volatile(script: Script, rng: random.Random) -> Script:
    """Fresh ids in every call's arguments (a request id, a nonce) and stamps in every result
    with content of its own (an ISO time, a duration, a trace id): what changes on each call
    without meaning anything. A result that is empty, or only a stamp itself (a clock read), is
    left alone: beside other stamps its content could not be told from them."""
    out: Script = []
    for item in script:
        if isinstance(item, str):
            out.append(item)
            continue
        steps = item if isinstance(item, list) else [item]
        changed = []
        for tool, args, result in steps:
            if isinstance(args, dict):
                args = {**args, "request_id": str(uuid.UUID(int=rng.getrandbits(128)))}
            stamp = f"{rng.randint(2024, 2026)}-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T10:0{rng.randint(0, 9)}:12Z"
            took = f"[{stamp}] took {rng.randint(1, 900)} ms, trace {uuid.UUID(int=rng.getrandbits(128))}"
            changed.append((tool, args, f"{result}\n{took}" if _has_content(result) else result))
        out.append(changed if isinstance(item, list) else changed[0])
    return out


_CODEX_HARNESS = re.compile(
    r"\AChunk ID: \S+\nWall time: [\d.]+ seconds\nProcess exited with code (\d+)\nOriginal token count: \d+\nOutput:\n"
)


def another_release(script: Script, rng: random.Random) -> Script:
    """Shell results in the envelope another release of the same client writes: Qwen Code
    0.15's (``Signal: 0``, a real process group) for 0.24's (``Signal: (none)``), Codex 0.77's
    ``shell_command`` (``Exit code: N``, ``Wall time``) for 0.171's ``exec_command`` harness."""

    def rewrap(result: str) -> str:
        result = result.replace("\nSignal: (none)\n", "\nSignal: 0\n").replace(
            "Process Group PGID: (none)", f"Process Group PGID: {rng.randint(100, 99999)}"
        )
        return _CODEX_HARNESS.sub(lambda m: f"Exit code: {m.group(1)}\nWall time: 0 seconds\nOutput:\n", result)

    return _map_steps(script, lambda step: (step[0], step[1], rewrap(step[2])))


def _has_content(result: str) -> bool:
    """Words of the tool's own, besides stamps and a harness's lines (Codex's Chunk ID ...)."""
    own = _HARNESS.sub("", result)
    return any(c.isalpha() for c in re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z?|[0-9a-f-]{36}", "", own))


_HARNESS = re.compile(r"^(?:Chunk ID|Wall time|Process exited with code|Original token count|Output)\b.*$", re.M)


def with_a_look_aside(script: Script, speaker: classes.Speaker, parallel: bool = True) -> Script:
    """Each round followed by a read of another file, a new one each time (the agent looks at
    something else while it works), in the same round or in one of its own."""
    read = next((t for t in ("Read", "read_file", "exec_command", "run_shell_command") if t in speaker.tools), None)
    if read is None:
        return script
    out: Script = []
    for k, item in enumerate(script):
        if isinstance(item, str):
            out.append(item)
            continue
        path = f"{classes.CWD}/docs/notes_{k}.md"
        args = (
            {"cmd": f"cat {path}"}
            if read == "exec_command"
            else ({"command": f"cat {path}"} if read == "run_shell_command" else {"file_path": path})
        )
        look = (read, args, f"# Notes {k}\nnothing to see here, page {k}")
        if parallel:
            out.append([*(item if isinstance(item, list) else [item]), look])
        else:
            out += [item, look]
    return out


def _map_args(script: Script, change: Callable[[str], str]) -> Script:
    def one(args: Any) -> Any:
        if isinstance(args, str):
            return change(args)
        if isinstance(args, dict):
            return {k: one(v) for k, v in args.items()}
        if isinstance(args, list):
            return [one(v) for v in args]
        return args

    return _map_steps(script, lambda step: (step[0], one(step[1]), step[2]))


def _map_values(script: Script, keys: set[str], change: Callable[[str], str]) -> Script:
    def one(args: Any) -> Any:
        if isinstance(args, dict):
            return {k: change(v) if k in keys and isinstance(v, str) else v for k, v in args.items()}
        return args

    return _map_steps(script, lambda step: (step[0], one(step[1]), step[2]))


def _map_steps(script: Script, change: Callable[[tuple], tuple]) -> Script:
    return [
        item if isinstance(item, str) else [change(s) for s in item] if isinstance(item, list) else change(item)
        for item in script
    ]


# --- the table ------------------------------------------------------------------------------------

ORIGINAL: dict[str, int] = {}


def original(name: str) -> int:
    if name not in ORIGINAL:
        case = FIXTURES[name]
        ORIGINAL[name] = verdict(case, case.script())
    return ORIGINAL[name]


def test_every_fixture_has_its_verdict_as_written():
    """The baseline the transformations are held to: loops warned or stopped, healthy runs
    never stopped."""
    for name in FIXTURES:
        assert original(name) >= (WARNED if name.startswith("loop") else NONE), name
        if name.startswith("healthy"):
            assert original(name) < STOPPED, name


DRAWN = settings(max_examples=1, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
RANDOM: dict[str, Callable[[Script, random.Random, classes.Speaker], Script]] = {
    "paths respelled": lambda script, rng, speaker: respelled(script, rng, speaker.cwd),
    "commands quoted": lambda script, rng, speaker: quoted(script, rng),
    "volatile values": lambda script, rng, speaker: volatile(script, rng),
    "another release's envelope": lambda script, rng, speaker: another_release(script, rng),
}


@pytest.mark.parametrize("transform", RANDOM)
@pytest.mark.parametrize("name", FIXTURES)
@DRAWN
@given(seed=st.integers(0, 2**32 - 1))
def test_a_random_rewriting_keeps_the_verdict(name, transform, seed):
    case = FIXTURES[name]
    script = RANDOM[transform](case.script(), random.Random(seed), case.speaker)
    assert holds(original(name), verdict(case, script), name.startswith("loop"))


@pytest.mark.parametrize("name", FIXTURES)
def test_a_look_aside_in_the_same_round_or_its_own_gives_one_verdict(name):
    case = FIXTURES[name]
    parallel = verdict(case, with_a_look_aside(case.script(), case.speaker, parallel=True))
    sequential = verdict(case, with_a_look_aside(case.script(), case.speaker, parallel=False))
    assert parallel == sequential


@pytest.mark.parametrize("protocol", [p for p in PROTOCOLS if p != "chat"])
@pytest.mark.parametrize("name", FIXTURES)
def test_every_protocol_gives_the_verdict_chat_gives(name, protocol):
    case = FIXTURES[name]
    assert verdict(case, case.script(), protocol) == original(name)
