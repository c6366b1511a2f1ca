"""Recording what a real coding-agent CLI sends, for any installed version of it.

The CLI is pointed straight at a scripted model of its own protocol (no gateway between: the
recording is the CLI's traffic) and the model walks it through ``STEPS``, one call per reply,
each spelled with the tools this version declares (``Client.spell`` reads their names and
schemas from the request; a step the version has no tool for is skipped). Its last request holds
the whole conversation: every result in the version's own envelope. ``record`` returns it with
the work directory, HOME and long prompt texts made stable (``compact``), as a fixture
``support.recorded`` reads.

Used by ``tests/fixtures/agents/record.py`` only, never at test time: it needs the CLI installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from support.anthropic_upstream import AnthropicUpstream, Said
from support.cli_runs import ChatUpstream
from support.clis_codex import Reply as CodexReply
from support.gemini_upstream import GeminiUpstream
from support.gemini_upstream import Said as GeminiSaid
from support.recorded import HOME, WIRES, WORK, Wire
from support.responses_upstream import Answer, ResponsesUpstream
from support.servers import serve
from support.upstream import Reply

# The session, one round per step. Success: the command's output, a read, an edit, a job started
# in the background and polled; failure: a failing command, a read of a missing file, an edit
# whose old text is not in the file. Failing commands run twice, so a loop can be built of two
# real instances of one envelope (what changes between them is what the profile must drop).
STEPS = (
    "shell_ok",
    "read_ok",
    "shell_fail",
    "shell_empty",
    "read_missing",
    "read_past_end",
    "edit_refused",
    "edit_ok",
    "bg_start",
    "bg_poll",
    "shell_fail",
    "bg_poll",
    "shell_ok",
)
SUCCEEDED = frozenset({"shell_ok", "shell_empty", "read_ok", "read_past_end", "edit_ok", "bg_start", "bg_poll"})
FAILED = frozenset({"shell_fail", "read_missing", "edit_refused"})
PROMPT = "Look after the notes in this folder."
DONE = "DONE: the notes are in order."
NOTES = "first\nsecond\nthird\n"
TICKER = "for i in 1 2 3 4 5 6; do echo tick $i; sleep 1; done"
MISSING = "missing.txt"

Call = tuple[str, Any]  # (tool name, arguments: a dict, or a freeform tool's text)


@dataclass
class Seen:
    """What the model knows when it spells the next step: the declared tools (name -> schema),
    the CLI's results so far as one text (for ids a job was given), the work directory."""

    tools: dict[str, Any]
    results: str
    work: Path

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


Spell = Callable[[str, Seen], "Call | None"]


def shell_command(kind: str, seen: Seen) -> str | None:
    """The command line of a shell step (its read steps too, for a version without a read tool)."""
    return {
        "shell_ok": "cat notes.txt",
        "shell_fail": f"cat {MISSING}",
        "shell_empty": "true",
        "read_ok": "sed -n '1,2p' notes.txt",
        "read_missing": f"head -n 5 {MISSING}",
        "read_past_end": "sed -n '50,60p' notes.txt",
    }.get(kind)


@dataclass(frozen=True)
class Launch:
    """One run's places: the CLI's executable, the scripted model's URL, the work directory and
    HOME, the model name to ask for."""

    exe: Path
    url: str
    work: Path
    home: Path
    model: str


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


@dataclass
class Model:
    """The scripted model: each agent request gets the next step the version can spell, then
    ``DONE`` (or the client's finishing call)."""

    client: Client
    wire: Wire
    work: Path
    proposed: list[str] = field(default_factory=list)  # the step kinds proposed, in order
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
            seen = Seen(self.wire.tools(body), json.dumps(client_side), self.work)
            while self.cursor < len(STEPS):
                kind = STEPS[self.cursor]
                self.cursor += 1
                call = self.client.spell(kind, seen)
                if call is not None:
                    self.proposed.append(kind)
                    self.calls.append(call)
                    return call
            return self.client.finish(seen) or DONE


def prepare(root: Path) -> tuple[Path, Path]:
    """A clean work directory (the notes file) and HOME under ``root``."""
    shutil.rmtree(root, ignore_errors=True)
    work, home = root / "work", root / "home"
    work.mkdir(parents=True)
    home.mkdir()
    (work / "notes.txt").write_text(NOTES)
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
    work = str(root / "work")
    places = {
        work: WORK,
        str(root / "home"): HOME,
        str(root): "/tmp/recording",
        re.sub(r"[^A-Za-z0-9]", "-", work): re.sub(r"[^A-Za-z0-9]", "-", WORK),  # a directory named after it
    }
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


def record(
    client: Client,
    version: str,
    prefix: Path,
    root: Path,
    variant: str = "",
    model: str | None = None,
    path: str | None = None,
) -> dict:
    """Drive ``client`` of ``version`` (installed under ``prefix``) through ``STEPS`` against a
    scripted model; the fixture of what it sent. ``path``: directories put first on the CLI's
    PATH (a version that needs another Node)."""
    work, home = prepare(root)
    wire = WIRES[client.wire]
    scripted = Model(client, wire, work)
    name = model or client.model
    with serve_model(client, scripted, name) as (url, requests):
        launch = Launch(prefix / "bin" / client.cli, url, work, home, name)
        command, env = client.launch(launch)
        if path:
            env = {**env, "PATH": f"{path}:{env.get('PATH', '')}"}
        run = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True, timeout=600)
    agent = [r for r in requests if r.get("json") and client.is_agent(r["json"]) and PROMPT in json.dumps(r["json"])]
    # The request after the last step: its conversation holds every round (a later one, such as
    # a background job's notice after the answer, holds the answer too).
    whole = [r for r in agent if len(wire.split(r["json"])[1]) == len(scripted.proposed)]
    if not scripted.proposed or not whole:
        counts = [len(wire.split(r["json"])[1]) for r in agent]
        raise RuntimeError(
            f"{client.profile} {version}: rounds {counts} for {scripted.proposed}\n"
            f"{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
        )
    return fixture(client, version, variant, whole[-1], scripted.proposed, root)


@contextmanager
def serve_model(client: Client, model: Model, name: str) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The scripted model (called ``name``) on loopback in the client's protocol: (its URL, the
    requests it got)."""
    upstream = _upstream(client, model, name)
    with serve(upstream.app) as url:
        yield url, upstream.requests


def _upstream(client: Client, model: Model, model_name: str) -> Any:
    def move(body: dict[str, Any]) -> Call | str | None:
        # The agent's own turns carry the prompt; a sub-agent's (Claude Code warms its helpers
        # up with "Warmup") or a side request (a title, a routing check) is answered briefly.
        mine = client.is_agent(body) and PROMPT in json.dumps(body)
        return model.next(body) if mine else None

    if client.wire == "anthropic":
        return AnthropicUpstream(lambda body: _said(move(body)))
    if client.wire == "gemini":
        return GeminiUpstream(lambda body: _gemini(move(body), body))
    if client.wire == "responses":
        return ResponsesUpstream(lambda conversation, body: _answer(move(body)))
    # A chat request that declares no tools is a client acting in text (XML tags).
    return ChatUpstream(lambda body: _reply(move(body), not body.get("tools")), model_name)


SIDE = "OK"  # the answer to a request of the CLI's own (a title, a summary, a routing check)


def _said(move: Call | str | None) -> Said:
    if move is None or isinstance(move, str):
        return Said(text=move or SIDE)
    return Said(calls=[(move[0], move[1])])


def _gemini(move: Call | str | None, body: dict[str, Any]) -> GeminiSaid:
    if move is None:  # a side request asking for JSON (a routing check, an edit's correction)
        return GeminiSaid(text=json.dumps(_filled(_schema(body))))
    if isinstance(move, str):
        return GeminiSaid(text=move)
    return GeminiSaid(calls=[(move[0], move[1])])


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    config = body.get("generationConfig") or {}
    return config.get("responseJsonSchema") or config.get("responseSchema") or {}


def _filled(schema: dict[str, Any]) -> Any:
    """A value of ``schema``'s shape: what a side request parses without failing. Texts say
    nothing can be corrected; numbers are middling."""
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _filled(v) for k, v in (schema.get("properties") or {}).items()}
    if kind == "array":
        return []
    if kind in ("number", "integer"):
        return 10
    if kind == "boolean":
        return False
    return "no change"


def _answer(move: Call | str | None) -> Answer:
    if move is None or isinstance(move, str):
        return Answer(move or SIDE)
    name, args = move
    if isinstance(args, str):  # a freeform tool's input
        return CodexReply(custom=(name, args))
    return CodexReply(calls=[(name, json.dumps(args))])


def _reply(move: Call | str | None, text_actions: bool) -> Reply:
    if move is None or isinstance(move, str):
        return Reply(content=move or SIDE)
    name, args = move
    if text_actions:
        return Reply(content=xml_action(name, args))
    return Reply(tool_calls=[(name, json.dumps(args))])


def xml_action(name: str, args: dict[str, Any]) -> str:
    """A tool call written as XML tags in the reply's text (Cline before native tools)."""
    params = "".join(f"<{k}>{v}</{k}>\n" for k, v in args.items())
    return f"<{name}>\n{params}</{name}>"
