"""Recording what a real coding-agent CLI sends, for any installed version of it.

The CLI is pointed straight at a scripted model of its own protocol (no gateway between: the
recording is the CLI's traffic; ``support.clis_record_wire``) and the model walks it through a
script of ``Step``s, one call per reply, each spelled with the tools this version declares
(``Client.spell`` reads their names and schemas from the request; a step the version has no tool
for is skipped): the ``SESSION`` (``record``), or the loops and healthy look-alikes of
``support.clis_scenarios`` (``record_scenarios``). Its last request holds the whole conversation:
every result in the version's own envelope, kept with the work directory, HOME and long prompt
texts made stable (``compact``), as a fixture ``support.recorded`` reads.

Used by ``tests/fixtures/agents/record.py`` only, never at test time: it needs the CLI installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.clis_record_wire import serve_model, xml_action
from support.recorded import HOME, WIRES, WORK, Wire


@dataclass(frozen=True)
class Step:
    """One call of a script, as any CLI spells it with its own tools: ``shell`` (``command``),
    ``read`` (``path``, a line range ``first``.. when ``count``; ``command`` is the same read
    as a shell command, for a CLI without a read tool), ``edit`` (``path``, ``old``, ``new``),
    ``bg_start`` / ``bg_poll`` (a job started in the background, polled). ``label``: the
    session's name for the step; ``before``: what changes in the work directory before it runs
    (a job that finishes)."""

    kind: str
    command: str = ""
    path: str = ""
    first: int = 0
    count: int = 0
    old: str = ""
    new: str = ""
    label: str = ""
    before: Callable[[Path], None] | None = None


def shell(command: str, label: str = "", before: Callable[[Path], None] | None = None) -> Step:
    return Step("shell", command, label=label, before=before)


def read(path: str, command: str, first: int = 0, count: int = 0, label: str = "") -> Step:
    return Step("read", command, path, first, count, label=label)


def edit(path: str, old: str, new: str, label: str = "") -> Step:
    return Step("edit", path=path, old=old, new=new, label=label)


NOTES = "first\nsecond\nthird\n"
TICKER = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 1; done"
MISSING = "missing.txt"
# The session, one round per step. Success: the command's output, a read, an edit, a job started
# in the background and polled; failure: a failing command, a read of a missing file, an edit
# whose old text is not in the file. Failing commands run twice, so a loop can be built of two
# real instances of one envelope (what changes between them is what the profile must drop).
SESSION = (
    shell("cat notes.txt", "shell_ok"),
    read("notes.txt", "sed -n '1,2p' notes.txt", label="read_ok"),
    shell(f"cat {MISSING}", "shell_fail"),
    shell("true", "shell_empty"),
    read(MISSING, f"head -n 5 {MISSING}", label="read_missing"),
    read("notes.txt", "sed -n '50,60p' notes.txt", 50, 10, "read_past_end"),
    edit("notes.txt", "no such line", "SECOND", "edit_refused"),
    edit("notes.txt", "second", "SECOND", "edit_ok"),
    Step("bg_start", TICKER, label="bg_start"),
    Step("bg_poll", label="bg_poll"),
    shell(f"cat {MISSING}", "shell_fail"),
    Step("bg_poll", label="bg_poll"),
    shell("cat notes.txt", "shell_ok"),
)
SUCCEEDED = frozenset({"shell_ok", "shell_empty", "read_ok", "read_past_end", "edit_ok", "bg_start", "bg_poll"})
FAILED = frozenset({"shell_fail", "read_missing", "edit_refused"})
PROMPT = "Look after the notes in this folder."
DONE = "DONE: the notes are in order."

Call = tuple[str, Any]  # (tool name, arguments: a dict, or a freeform tool's text)


@dataclass
class Seen:
    """What the model knows when it spells the next step: the declared tools (name -> schema),
    the CLI's results so far as one text (for ids a job was given), the work directory."""

    tools: dict[str, Any]
    results: str
    work: Path
    index: int = 0  # calls made so far (a narration that differs, as a model's does)

    def has(self, *names: str) -> str | None:
        """The first of ``names`` this version declares."""
        return next((n for n in names if n in self.tools), None)

    def param(self, tool: str, *names: str) -> str | None:
        """The first of ``names`` that ``tool``'s schema has as a parameter."""
        props = (self.tools.get(tool) or {}).get("properties") or {}
        return next((n for n in names if n in props), None)

    def found(self, pattern: str) -> str | None:
        """The last match of ``pattern``'s group in the results so far."""
        hits = re.findall(pattern, self.results)
        return hits[-1] if hits else None

    def path(self, name: str) -> str:
        return str(self.work / name)


Spell = Callable[[Step, Seen], "Call | None"]


@dataclass(frozen=True)
class Launch:
    """One run's places: the CLI's executable, the scripted model's URL, the work directory and
    HOME, the model name to ask for."""

    exe: Path
    url: str
    work: Path
    home: Path
    model: str
    variant: str = ""  # what else the CLI is told (mini-SWE-agent's "text" mode)


@dataclass(frozen=True)
class Client:
    """One CLI: its profile (the fixture's directory), npm package and executable, protocol, how
    it is run (``launch``: command and environment), how it spells a step, which of its requests
    are the agent's own (not a side request), and whether it acts in text (XML tags)."""

    profile: str
    package: str
    cli: str
    wire: str
    launch: Callable[[Launch], tuple[list[str], dict[str, str]]]
    spell: Spell
    is_agent: Callable[[dict[str, Any]], bool]
    model: str = "test-model"
    # The call that ends its run where it ends by a call (given what it declares), else None.
    finish: Callable[[Seen], Call | None] = lambda seen: None
    # How it writes a call in its reply's text when it declares no tools (Cline: XML tags).
    in_text: Callable[[str, Any], str] = lambda name, args: xml_action(name, args)


@dataclass
class Model:
    """The scripted model: each agent request gets the next step the version can spell, then
    ``DONE`` (or the client's finishing call)."""

    client: Client
    wire: Wire
    work: Path
    steps: tuple[Step, ...] = SESSION
    proposed: list[str] = field(default_factory=list)  # the steps proposed (their labels), in order
    unspelled: int = 0  # steps this version has no tool for
    calls: list[Call] = field(default_factory=list)
    cursor: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self, body: dict[str, Any]) -> Call | str:
        with self.lock:
            _, rounds = self.wire.split(body)
            done = len(rounds)
            if done < len(self.calls):  # the same request again: the same answer
                return self.calls[done]
            client_side = [i for r in rounds for i in r if not self.wire.model_side(i)]
            seen = Seen(self.wire.tools(body), json.dumps(client_side), self.work, done)
            while self.cursor < len(self.steps):
                step = self.steps[self.cursor]
                self.cursor += 1
                call = self.client.spell(step, seen)
                self.unspelled += call is None
                if call is not None:
                    if step.before is not None:
                        step.before(self.work)
                    self.proposed.append(step.label or step.kind)
                    self.calls.append(call)
                    return call
            return self.client.finish(seen) or DONE


def prepare(root: Path, files: dict[str, str] | None = None) -> tuple[Path, Path]:
    """A clean work directory (the notes file, or ``files``) and HOME under ``root``."""
    shutil.rmtree(root, ignore_errors=True)
    work, home = root / "work", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    for name, text in (files if files is not None else {"notes.txt": NOTES}).items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    return work, home


def compact(value: Any, places: dict[str, str], limit: int = 4000) -> Any:
    """``value`` with the run's own paths written as the stable ones and every text longer than
    ``limit`` cut to its opening (system prompts, tool manuals: the opening is what names the
    agent; the conversation's own texts are short)."""
    if isinstance(value, str):
        for old, new in places.items():
            value = value.replace(old, new)
        return value if len(value) <= limit else value[:limit] + f"\n[... {len(value) - limit} characters cut]"
    if isinstance(value, dict):
        return {k: compact(v, places, 600 if k == "description" else limit) for k, v in value.items()}
    if isinstance(value, list):
        return [compact(v, places, limit) for v in value]
    return value


KEPT_HEADERS = ("user-agent", "originator", "x-initiator")


def fixture(client: Client, version: str, variant: str, request: dict[str, Any], steps: list[str], root: Path) -> dict:
    """The fixture of one recorded session: its last agent request, made stable."""
    places = _places(root)
    headers = {k: compact(v, places) for k, v in request["headers"].items() if k in KEPT_HEADERS}
    path = request["path"] + (f"?{request['query']}" if request.get("query") else "")
    return {
        "client": client.profile,
        "version": version,
        "variant": variant,
        "wire": client.wire,
        "package": client.package,
        "path": path,
        "headers": headers,
        "steps": steps,
        "body": compact(request["json"], places),
    }


def _places(root: Path) -> dict[str, str]:
    """The run's own paths, and what a fixture writes instead."""
    work = str(root / "work")
    return {
        work: WORK,
        str(root / "home"): HOME,
        str(root): "/tmp/recording",
        re.sub(r"[^A-Za-z0-9]", "-", work): re.sub(r"[^A-Za-z0-9]", "-", WORK),  # a directory named after it
    }


def record(
    client: Client,
    version: str,
    prefix: Path,
    root: Path,
    variant: str = "",
    model: str | None = None,
    path: str | None = None,
) -> dict:
    """Drive ``client`` of ``version`` (installed under ``prefix``) through ``SESSION`` against
    a scripted model; the fixture of what it sent. ``path``: directories put first on the CLI's
    PATH (a version that needs another Node)."""
    request, proposed, _ = drive(client, version, Installed(prefix, model, path, variant), root, SESSION)
    return fixture(client, version, variant, request, proposed, root)


@dataclass(frozen=True)
class Installed:
    """Where a version is (its npm prefix), the model it is told to use, PATH additions."""

    prefix: Path
    model: str | None = None
    path: str | None = None
    variant: str = ""


def drive(
    client: Client,
    version: str,
    at: Installed,
    root: Path,
    steps: tuple[Step, ...],
    files: dict[str, str] | None = None,
) -> tuple[dict[str, Any], list[str], int]:
    """Run the CLI through ``steps`` (in a work directory of ``files``): its request holding the
    most rounds, the labels of the steps those rounds are, and how many steps it could not spell.
    A CLI that ends a run itself (its own loop guard) holds fewer rounds than steps."""
    work, home = prepare(root, files)
    wire = WIRES[client.wire]
    scripted = Model(client, wire, work, steps)
    name = at.model or client.model
    with serve_model(client, scripted, name, PROMPT) as (url, requests):
        command, env = client.launch(Launch(at.prefix / "bin" / client.cli, url, work, home, name, at.variant))
        if at.path:
            env = {**env, "PATH": f"{at.path}:{env.get('PATH', '')}"}
        run = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=900)
    agent = [r for r in requests if r.get("json") and client.is_agent(r["json"]) and PROMPT in json.dumps(r["json"])]
    counted = [(len(wire.split(r["json"])[1]), k, r) for k, r in enumerate(agent)]
    if not scripted.proposed or not counted or max(counted)[0] == 0:
        raise RuntimeError(
            f"{client.profile} {version}: no rounds for {scripted.proposed}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        )
    # The latest request holding a round for each step (a later one holds the answer too, and
    # what the CLI did after it: Copilot CLI reads a background job that ended after the answer);
    # a CLI that ended the run itself holds fewer: its latest request with the most.
    whole = [c for c in counted if c[0] == len(scripted.proposed)]
    rounds, _, request = max(whole or counted, key=lambda c: (c[0], c[1]))
    return request, scripted.proposed[:rounds], scripted.unspelled


def record_scenarios(
    client: Client, version: str, at: Installed, root: Path, scenarios: list[Any], variant: str = ""
) -> dict:
    """Each of ``scenarios`` (support.clis_scenarios) run by the CLI: the rounds it recorded,
    made stable; the head of its requests is its session fixture's."""
    out = []
    for scenario in scenarios:
        where = root / scenario.name
        request, proposed, unspelled = drive(client, version, at, where, scenario.steps, scenario.files)
        if unspelled:
            continue  # a run it cannot make (mini-SWE-agent has no editor to refuse an edit)
        rounds = WIRES[client.wire].split(request["json"])[1][: len(proposed)]
        out.append({"name": scenario.name, "loop": scenario.loop, "rounds": compact(rounds, _places(where))})
    return {"client": client.profile, "version": version, "variant": variant, "scenarios": out}
