"""Gemini CLI (``gemini -p ... --yolo``) through a real gateway in front of a scripted Gemini API
upstream, and the looping and healthy scripts its model follows.

Qwen Code is a fork of Gemini CLI: the same scripts drive it (tests/support/clis_qwen.py), spoken
with its own tool vocabulary (``Vocabulary``). A script reads what the model would see (the tool
results so far, whether a ``[LoopGuard`` text reached it) and proposes the next call, or ``None``
to finish with ``DONE``. When the gateway closes the tools for the final answer the model answers
``FINAL``; the test then looks for it in the CLI's stdout.

The CLI is run headless with HOME in a temporary directory whose settings turn off telemetry,
update checks, the IDE integration and the CLI's own loop detection (the gateway is what is
measured), and with every base URL at the gateway: nothing leaves the machine.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.cli_runs import policy_file, read_audit, start_gateway
from support.clis import agents_env, find_cli
from support.gemini_upstream import GeminiUpstream, Said, tools_closed
from support.servers import serve

FINAL = "FINAL ANSWER: the loop was stopped, here is what I found."
DONE = "DONE: the task is complete."
GAVE_UP = "GAVE UP: the script ran out of steps."  # a loop nobody stopped
VETO = "[loopguard]"  # how the gateway's error observation for a vetoed call starts
GATEWAY_TEXT = "[loopguard"  # any gateway text reaching the model (warning, re-ask, veto), lower-cased

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class Seen:
    """What the model sees in one request: every tool result in order (vetoed ones included,
    they are answers to its proposals too), how many of them ran, and whether a gateway text
    reached it."""

    results: list[str]
    executed: int
    warned: bool

    @property
    def step(self) -> int:
        return len(self.results)

    @property
    def last(self) -> str:
        return self.results[-1] if self.results else ""


Script = Callable[[Seen], "Call | None"]


@dataclass(frozen=True)
class Vocabulary:
    """How a CLI spells the calls the scripts make: shell, read with a line range, edit."""

    shell: str = "run_shell_command"
    read: str = "read_file"
    edit: str = "replace"
    one_based_range: bool = True  # Gemini CLI: start_line/end_line; Qwen Code: offset/limit

    def run(self, command: str, description: str | None = None) -> Call:
        args: dict[str, Any] = {"command": command}
        if description:
            args["description"] = description
        return (self.shell, args)

    def read_range(self, path: Path, first: int, count: int) -> Call:
        """Lines ``first``.. ``first + count - 1`` (1-based) of ``path``."""
        if self.one_based_range:
            return (self.read, {"file_path": str(path), "start_line": first, "end_line": first + count - 1})
        return (self.read, {"file_path": str(path), "offset": first - 1, "limit": count})

    def read_whole(self, path: Path) -> Call:
        return (self.read, {"file_path": str(path)})

    def replace(self, path: Path, old: str, new: str) -> Call:
        args = {"file_path": str(path), "old_string": old, "new_string": new}
        if self.edit == "replace":
            args["instruction"] = "Fix the function."
        return (self.edit, args)


GEMINI = Vocabulary()


# -- scripts ----------------------------------------------------------------------------------


def sequence(calls: list[Call], then: str | None = DONE) -> Script:
    """The calls in order, one per reply; then finish."""

    def next_call(seen: Seen) -> Call | None:
        return calls[seen.step] if seen.step < len(calls) else None

    next_call.finish = then  # type: ignore[attr-defined]
    return next_call


def loop(calls: list[Call]) -> Script:
    """A loop: the calls in order; if nothing stopped it, it gives up (the test then fails)."""
    return sequence(calls, then=GAVE_UP)


def finish_text(script: Script) -> str:
    return getattr(script, "finish", None) or DONE


@dataclass(frozen=True)
class Scenario:
    """One run: the files it needs, the prompt, the script; ``calls`` is how many calls a
    healthy script makes on its own (None for a loop)."""

    name: str
    prepare: Callable[[Path], None]
    script: Callable[[Path, Vocabulary], Script]
    calls: int | None = None
    prompt: str = "Do the task in this directory."


def _files(contents: dict[str, str]) -> Callable[[Path], None]:
    """Write each (relative path, text) into the work directory."""

    def prepare(work: Path) -> None:
        for name, text in contents.items():
            path = work / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)

    return prepare


FAILING_TEST = "def test_total():\n    assert sum([1, 2]) == 4\n"
CALC = "def total(items):\n    return sum(items)\n"
SHORT = "alpha\nbeta\ngamma\n"
LONG = "".join(f"line {n:03d}: the long file's text {n * 7}\n" for n in range(1, 201))


def failing_test(work: Path, v: Vocabulary) -> Script:
    """1. The same failing test run spelled many ways."""
    spellings = [
        "python -m pytest tests -q",
        "pytest tests/",
        "python3 -m pytest -x tests",
        f"cd {work} && pytest tests",
        "python -m pytest tests",
        "pytest -q tests",
        "python3 -m pytest tests -q",
        "pytest tests -x",
        f"cd {work} && python -m pytest tests/",
        "python -m pytest ./tests",
        "pytest ./tests -q",
        "python3 -m pytest tests/ -x",
    ]
    return loop([v.run(c) for c in spellings * 2])


def read_tool_past_end(work: Path, v: Vocabulary) -> Script:
    """2a. The CLI's read tool past the end of a 3-line file, a new range each time."""
    return loop([v.read_range(work / "a.txt", 100 + 20 * n, 20) for n in range(20)])


def sed_past_end(work: Path, v: Vocabulary) -> Script:
    """2b. ``sed -n 'A,Bp'`` past the end, a new range each time (empty output every time)."""
    return loop([v.run(f"sed -n '{100 + 20 * n},{119 + 20 * n}p' a.txt") for n in range(20)])


def refused_edit(work: Path, v: Vocabulary) -> Script:
    """3. An edit whose old text is not in the file, retried with small changes (unlike the
    file's text, so Gemini CLI's fuzzy matcher finds nothing either)."""
    olds = [
        f"def total(values):\n    # add the values up{'!' * (n % 3)}\n"
        f"    return functools.reduce(operator.add, values, {n // 3})\n"
        for n in range(20)
    ]
    return loop([v.replace(work / "calc.py", old, "def total(values):\n    return sum(values)\n") for old in olds])


def poll_spelled_many_ways(work: Path, v: Vocabulary) -> Script:
    """4. One status file polled with many spellings; it always says "running"."""
    spellings = [
        "cat status.txt",
        "tail -1 status.txt",
        "tail -n 1 ./status.txt",
        "head status.txt",
        f"cat {work}/status.txt",
        "head -n 1 status.txt",
        "tail status.txt",
        "cat ./status.txt",
        "head -1 ./status.txt",
        "tail -n1 status.txt",
        f"tail -n 1 {work}/status.txt",
        "head -n1 status.txt",
    ]
    return loop([v.run(c) for c in spellings * 2])


def missing_file_switch(work: Path, v: Vocabulary) -> Script:
    """5. ``cat x.txt`` on a missing file until warned; then other programs, same missing file."""
    others = [
        "head x.txt",
        "grep foo x.txt",
        "wc -l x.txt",
        "tail x.txt",
        "sed -n 1p x.txt",
        "awk 'NR==1' x.txt",
        "cut -c1-5 x.txt",
        "sort x.txt",
        "nl x.txt",
        "od -c x.txt",
        "tac x.txt",
        "uniq x.txt",
    ]
    first_warned: list[int] = []

    def next_call(seen: Seen) -> Call | None:
        if seen.step >= 20:
            return None
        if not seen.warned:
            return v.run("cat x.txt")
        first_warned[:1] = first_warned[:1] or [seen.step]
        return v.run(others[(seen.step - first_warned[0]) % len(others)])

    next_call.finish = GAVE_UP  # type: ignore[attr-defined]
    return next_call


def many_files(work: Path, v: Vocabulary) -> Script:
    """a. 30 different files read."""
    return sequence([v.read_whole(work / f"f{n:02d}.txt") for n in range(1, 31)])


def edit_run_test(work: Path, v: Vocabulary) -> Script:
    """b. Edit, run the test, edit again: the test output changes each time and finally passes.
    The file is read before it is edited (Qwen Code refuses an edit of a file it has not read)."""
    calc, run = work / "calc.py", v.run("python3 check_calc.py")
    bodies = ["a - b", "a * b", "b - a", "a + b"]
    calls: list[Call] = [v.read_whole(calc), run]
    for old, new in itertools.pairwise(bodies):
        calls += [v.replace(calc, f"    return {old}\n", f"    return {new}\n"), run]
    return sequence(calls)


CHECK_CALC = (
    "from calc import add\n\nresult = add(2, 3)\n"
    "print('ok' if result == 5 else f'FAIL: add(2, 3) returned {result}, expected 5')\n"
    "raise SystemExit(0 if result == 5 else 1)\n"
)


def paced_poll(work: Path, v: Vocabulary) -> Script:
    """c. ``sleep 1 && cat status.txt`` until it says done: the job finishes at poll 6 (the
    status file is changed before the 6th poll runs)."""

    def next_call(seen: Seen) -> Call | None:
        if "done" in seen.last:
            return None
        if seen.executed == 5:
            (work / "status.txt").write_text("done\n")
        return v.run("sleep 1 && cat status.txt", f"Check the job status (poll {seen.step + 1})")

    return next_call


JOB = (
    "from pathlib import Path\n\ncounter = Path('job.count')\n"
    "n = int(counter.read_text()) + 1 if counter.exists() else 1\ncounter.write_text(str(n))\n"
    "print(f'job step {n}/8 ' + ('done' if n >= 8 else 'running'))\n"
)


def moving_poll(work: Path, v: Vocabulary) -> Script:
    """d. The same status command whose output moves every time; done at poll 8."""

    def next_call(seen: Seen) -> Call | None:
        if "done" in seen.last or seen.step >= 12:
            return None
        return v.run("python3 job.py", f"Check the job progress (poll {seen.step + 1})")

    return next_call


def sweep(work: Path, v: Vocabulary) -> Script:
    """e. One command swept over 12 files."""
    return sequence([v.run(f"wc -l f{n}.txt") for n in range(1, 13)])


def scroll_read_tool(work: Path, v: Vocabulary) -> Script:
    """f. Scrolling a 200-line file with the read tool, 20 lines at a time."""
    return sequence([v.read_range(work / "long.txt", 1 + 20 * n, 20) for n in range(10)])


def scroll_sed(work: Path, v: Vocabulary) -> Script:
    """f. Scrolling a 200-line file with ``sed -n 'A,Bp'``, 20 lines at a time."""
    return sequence([v.run(f"sed -n '{1 + 20 * n},{20 + 20 * n}p' long.txt") for n in range(10)])


LOOPS = [
    Scenario(
        "failing_test_many_spellings", _files({"calc.py": CALC, "tests/test_calc.py": FAILING_TEST}), failing_test
    ),
    Scenario("read_tool_past_end", _files({"a.txt": SHORT}), read_tool_past_end),
    Scenario("sed_past_end", _files({"a.txt": SHORT}), sed_past_end),
    Scenario("refused_edit_retried", _files({"calc.py": CALC}), refused_edit),
    Scenario("poll_spelled_many_ways", _files({"status.txt": "running\n"}), poll_spelled_many_ways),
    Scenario("missing_file_program_switch", _files({"readme.txt": "x.txt is missing\n"}), missing_file_switch),
]


def same_call(work: Path, v: Vocabulary) -> Script:
    """One identical call again and again (only its narration changes, as models write it, so
    Qwen Code's own check of 5 identical calls in a row leaves the loop to the gateway)."""
    return loop([v.run("cat status.txt", f"Check the job status (attempt {n + 1})") for n in range(20)])


SAME_CALL = Scenario("same_call_repeated", _files({"status.txt": "running\n"}), same_call)


HEALTHY = [
    Scenario(
        "thirty_files_read",
        _files({f"f{n:02d}.txt": f"file {n} says {n * n}\n" for n in range(1, 31)}),
        many_files,
        calls=30,
    ),
    Scenario(
        "edit_run_test_passes",
        _files({"calc.py": "def add(a, b):\n    return a - b\n", "check_calc.py": CHECK_CALC}),
        edit_run_test,
        calls=8,
    ),
    Scenario("paced_poll_done_at_6", _files({"status.txt": "running\n"}), paced_poll, calls=6),
    Scenario("moving_poll_done_at_8", _files({"job.py": JOB}), moving_poll, calls=8),
    Scenario("sweep_twelve_files", _files({f"f{n}.txt": "x\n" * n for n in range(1, 13)}), sweep, calls=12),
    Scenario("scroll_read_tool", _files({"long.txt": LONG}), scroll_read_tool, calls=10),
    Scenario("scroll_sed", _files({"long.txt": LONG}), scroll_sed, calls=10),
]


# -- the model, in the Gemini API's shapes ----------------------------------------------------


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def gemini_seen(body: dict[str, Any]) -> Seen:
    """The tool results (``functionResponse`` parts) of a Gemini request, as text."""
    results = [
        "\n".join(_strings(p["functionResponse"].get("response", {})))
        for c in body.get("contents", [])
        for p in c.get("parts", [])
        if "functionResponse" in p
    ]
    executed = sum(1 for r in results if not r.lstrip().startswith(VETO))
    return Seen(results, executed, GATEWAY_TEXT in json.dumps(body).lower())


def _system(body: dict[str, Any]) -> str:
    instruction = body.get("systemInstruction") or {}
    parts = instruction.get("parts", []) if isinstance(instruction, dict) else []
    return " ".join(p.get("text", "") for p in parts)


def gemini_model(script: Script) -> Callable[[dict], Said]:
    """The scripted Gemini model: the agent's requests follow the script; the gateway's
    tools-closed request gets ``FINAL``; the CLI's side requests (routing) a short JSON."""

    def respond(body: dict) -> Said:
        if "You are Gemini CLI" not in _system(body):
            return Said(text='{"complexity_reasoning": "a simple task", "complexity_score": 10}')
        if tools_closed(body):
            return Said(text=FINAL)
        call = script(gemini_seen(body))
        return Said(text=finish_text(script)) if call is None else Said(calls=[call])

    return respond


# -- the run ----------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What a run did: the CLI's exit code and output, and what the upstream saw."""

    returncode: int
    stdout: str
    stderr: str
    seen: list[Seen]
    closed: int  # requests the gateway sent with tools closed (the final answer)
    audit: list[dict[str, Any]] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)  # the agent's requests as the upstream got them

    @property
    def executed(self) -> int:
        return max((s.executed for s in self.seen), default=0)

    @property
    def warned(self) -> bool:
        return any(s.warned for s in self.seen)

    @property
    def ended_requests(self) -> int:
        """Client requests the gateway ended (terminate): more than one is the client retrying."""
        return len({e.get("request_id") for e in self.audit if e.get("action") == "terminate"})

    @property
    def resent(self) -> int:
        """Upstream requests with a conversation already sent before: a client request sent
        again (a retry), or the gateway's own tools-closed request for the final answer."""
        return len(self.seen) - len({tuple(s.results) for s in self.seen})

    def story(self) -> str:
        """For assertion messages: what the gateway did, and the end of the CLI's output."""
        actions = [(e.get("detector"), e.get("action"), e.get("phase"), e.get("count")) for e in self.audit]
        return (
            f"executed={self.executed} warned={self.warned} closed={self.closed} rc={self.returncode}\n"
            f"gateway: {actions}\nstdout: {self.stdout[-600:]}\nstderr: {self.stderr[-1500:]}"
        )


def tool_env(home: Path) -> dict[str, str]:
    """The environment every CLI run gets: HOME in the test's directory, this Python first on
    PATH (the scripts run ``python``/``pytest``), the agents' prefix on PATH, no browser, CI."""
    path = os.pathsep.join([str(Path(sys.executable).parent), agents_env()["PATH"]])
    return {
        **os.environ,
        "HOME": str(home),
        "PATH": path,
        "NO_BROWSER": "1",
        "CI": "1",
        "NO_COLOR": "1",
        "TERM": "dumb",
    }


GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "ide": {"enabled": False},
    # The CLI's own check (5 identical calls in a row) is off: the gateway is what is measured.
    "model": {"disableLoopDetection": True},
}


@dataclass(frozen=True)
class Fork:
    """How one CLI of the family is run: its executable, the settings file under
    ``$HOME/<home_dir>``, the scripted model's server (``upstream(script)``, with ``app`` and the
    ``requests`` it recorded) and where the gateway finds it (``route(url)``: upstream config),
    the CLI's own variables given the gateway's URL (``env``), and how the model's side reads a
    request: the agent's own (``is_agent``), what the model sees, tools closed."""

    cli: str
    home_dir: str
    settings: dict[str, Any]
    upstream: Callable[[Script], Any]
    route: Callable[[str], dict[str, str]]
    env: Callable[[str], dict[str, str]]
    is_agent: Callable[[dict[str, Any]], bool]
    seen: Callable[[dict[str, Any]], Seen]
    closed: Callable[[dict[str, Any]], bool]


def run_fork(fork: Fork, scenario: Scenario, base: Path, vocabulary: Vocabulary, policy: str | None = None) -> Outcome:
    """Run ``scenario`` with ``fork``'s CLI (``-p PROMPT --yolo``) through a gateway (the default
    policy, or the policy text ``policy``) to a scripted model."""
    work, home, audit = base / "work", base / "home" / fork.home_dir, base / "audit.jsonl"
    work.mkdir(parents=True)
    scenario.prepare(work)
    home.mkdir(parents=True)
    (home / "settings.json").write_text(json.dumps(fork.settings))
    upstream = fork.upstream(scenario.script(work, vocabulary))
    with ExitStack() as stack:
        url = stack.enter_context(serve(upstream.app))
        gateway = start_gateway(stack, fork.route(url), audit, policy_file(base, policy))
        run = subprocess.run(
            [find_cli(fork.cli) or fork.cli, "-p", scenario.prompt, "--yolo"],
            cwd=work,
            env={**tool_env(home.parent), **fork.env(gateway)},
            capture_output=True,
            text=True,
            timeout=180,
        )
    agent = [r["json"] for r in upstream.requests if r["json"] and fork.is_agent(r["json"])]
    return Outcome(
        run.returncode,
        run.stdout,
        run.stderr,
        [fork.seen(b) for b in agent],
        sum(1 for b in agent if fork.closed(b)),
        read_audit(audit),
        agent,
    )


GEMINI_CLI = Fork(
    "gemini",
    ".gemini",
    GEMINI_SETTINGS,
    lambda script: GeminiUpstream(gemini_model(script)),
    lambda url: {"gemini_base_url": url},
    lambda gateway: {
        "GEMINI_API_KEY": "gm-cli-test",
        "GOOGLE_GEMINI_BASE_URL": gateway,
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    },
    lambda body: "You are Gemini CLI" in _system(body),
    gemini_seen,
    tools_closed,
)


def run_gemini(scenario: Scenario, base: Path, vocabulary: Vocabulary = GEMINI, policy: str | None = None) -> Outcome:
    """Run ``scenario`` with Gemini CLI through a gateway (default policy unless ``policy``) to a
    scripted model."""
    return run_fork(GEMINI_CLI, scenario, base, vocabulary, policy)
