"""What the real coding-agent CLI tests share, whatever the CLI.

A run puts a real gateway (the shipped default policy, or a variant of it) between the CLI and a
scripted model on loopback, has the gateway append its interventions to an audit file, and reads
back from the model's side what the CLI executed. Every CLI needs these pieces the same way; what
a CLI speaks (its wire protocol, tool names, settings, environment) stays in its own module.

The turn scripts (``Turn``, ``Scenario``, ``TurnModel``, ``Outcome``) are the ones Claude Code and
Codex follow: ``step(turn)`` gives the next call, or None when the model is done; the model
answers ``FINAL`` whenever the gateway closes the tools, ``DONE`` when its script ends, and a
loop nobody ends gives up with ``GAVE_UP`` after ``LIMIT`` calls.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson
from starlette.requests import Request
from starlette.responses import Response

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.policy.loader import shipped_policy_path
from gateway.server.app import SERVER_OPTIONS, build_app
from support.looping import RespondingUpstream
from support.servers import serve
from support.upstream import Reply

MAX_EXECUTED = 8  # executed calls of a loop's pattern the gateway may let run before it ends it
INTERVENTION = "loop_intervention"  # the audit event of a warn, reject or terminate
# Whatever a CLI still tries to reach besides the gateway goes to a closed port and fails at once.
NOWHERE = "http://127.0.0.1:9"
PROXIES = {
    "HTTPS_PROXY": NOWHERE,
    "HTTP_PROXY": NOWHERE,
    "https_proxy": NOWHERE,
    "http_proxy": NOWHERE,
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}


# -- the gateway, its policy and its audit ------------------------------------------------------


def default_policy() -> str:
    return shipped_policy_path("default").read_text(encoding="utf-8")


def error_mode_policy() -> str:
    """The shipped default policy with ``interventions.terminate.mode: error``: a run is ended
    by the protocol's error instead of the model's own answer."""
    text = default_policy()
    changed = text.replace("    mode: answer ", "    mode: error  ", 1)
    assert changed != text, "the default policy's terminate mode line moved"
    return changed


def policy_file(root: Path, text: str | None) -> Path:
    """The shipped default policy's file, or ``text`` written beside the run."""
    if text is None:
        return shipped_policy_path("default")
    (root / "policy.yaml").write_text(text, encoding="utf-8")
    return root / "policy.yaml"


def start_gateway(stack: ExitStack, upstream: dict[str, str], audit: Path, policy: Path | None = None) -> str:
    """A real gateway on loopback for the life of ``stack``: OpenAI traffic to a closed port
    unless ``upstream`` names it, interventions appended to ``audit``, the shipped default policy
    unless ``policy``. Returns its URL."""
    config = Config.model_validate(
        {"upstream": {"base_url": NOWHERE + "/v1", **upstream}, "audit": {"jsonl_path": str(audit)}}
    )
    app = build_app(config, policies=PolicyHolder(policy or shipped_policy_path("default")))
    return stack.enter_context(serve(app, **SERVER_OPTIONS))


def read_audit(path: Path, event: str | None = INTERVENTION) -> list[dict[str, Any]]:
    """The gateway's audit events of kind ``event`` (None: of every kind) in the order it wrote
    them; none when it wrote no file."""
    if not path.exists():
        return []
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [e for e in events if event is None or e.get("event") == event]


def write_files(work: Path, files: dict[str, str]) -> Path:
    """The work directory, with each (relative path, text) of ``files`` in it."""
    work.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text)
    return work


# -- OpenAI shapes (chat completions, Responses) ------------------------------------------------


def tools_closed(body: dict[str, Any]) -> bool:
    """The gateway asks for the final answer with the tools closed: ``tool_choice: "none"``, or
    no tools declared."""
    return not body.get("tools") or body.get("tool_choice") == "none"


def text_of(content: Any) -> str:
    """A message's or tool result's text: its text parts one a line, or the string itself."""
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


class ChatUpstream(RespondingUpstream):
    """A scripted chat-completions model: every request answered by ``responder``, streamed or
    not as asked, and recorded; ``/v1/models`` lists ``model`` (the one the CLI is told to use)."""

    def __init__(self, responder: Callable[[dict[str, Any]], Reply], model: str = "test-model") -> None:
        super().__init__(responder)
        self.model = model

    @property
    def bodies(self) -> list[dict[str, Any]]:
        """The chat requests' bodies, in the order they came."""
        return [r["json"] for r in self.requests if r["path"] == "/v1/chat/completions"]

    async def _other(self, request: Request) -> Response:
        if request.url.path != "/v1/models":
            return await super()._other(request)
        listed = {"object": "list", "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "t"}]}
        return Response(orjson.dumps(listed), media_type="application/json")


# -- how a run must end -------------------------------------------------------------------------


class Ran(Protocol):
    returncode: int
    stdout: str

    def story(self) -> str: ...


def check_ended(outcome: Ran, final: str, executed: int, closed: int) -> None:
    """A loop ends with the model's own answer, which the gateway asked for with the tools
    closed, after at most ``MAX_EXECUTED`` executed calls of its pattern; the CLI exits 0."""
    assert outcome.returncode == 0, outcome.story()
    assert final in outcome.stdout, outcome.story()
    assert closed >= 1, outcome.story()
    assert executed <= MAX_EXECUTED, outcome.story()


def check_untouched(outcome: Ran, done: str, executed: int, calls: int | None, warned: bool) -> None:
    """A healthy look-alike runs every call of its script to the model's own end, and no
    gateway text ever reaches the model."""
    assert outcome.returncode == 0, outcome.story()
    assert done in outcome.stdout, outcome.story()
    assert executed == calls, outcome.story()
    assert not warned, outcome.story()


# -- turn scripts (Claude Code, Codex) ----------------------------------------------------------

FINAL = "FINAL ANSWER: I was going round in circles, so I stopped and report what I found."
DONE = "DONE: the task is complete."
GAVE_UP = "GAVE UP: the script ran out of calls."
LIMIT = 20  # a loop nobody stops gives up after this many calls: a failure, found fast
MARK = "[loopguard"  # every gateway text starts so, in any letter case

Call = tuple[str, Any]  # (tool name, input: a dict, or a freeform tool's text)


@dataclass
class Turn:
    """What the scripted model knows when it picks its next call."""

    index: int  # calls proposed so far in this run
    results: list[str]  # the CLI's own tool results in this request, oldest first
    warned: bool  # a gateway text has reached the model at some point of the run
    work: Path

    @property
    def last(self) -> str:
        return self.results[-1] if self.results else ""


Step = Callable[[Turn], "Call | None"]
Counted = Callable[[str, Any], bool]  # (tool name, input) -> is the call part of the pattern


@dataclass
class Scenario:
    """One scripted run: its prompt, its model, the files it starts from, and which executed
    calls belong to the pattern (``counted``; a loop's set-up call, such as the Read an Edit
    needs first, is not part of it)."""

    name: str
    step: Step
    files: dict[str, str] = field(default_factory=dict)
    calls: int = 0  # healthy: how many calls the script makes
    counted: Counted = lambda name, args: True
    prompt: str = "Please get the tests in this folder passing."


@dataclass
class TurnModel:
    """The scripted model's state over a run, whatever protocol it is spoken in: how many calls
    it proposed, whether a gateway text reached it, how often the gateway closed the tools."""

    scenario: Scenario
    work: Path
    proposed: int = 0
    warned: bool = False
    closed: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def closing(self, body: dict[str, Any], closed: bool) -> str | None:
        """Notes a gateway text in the request; ``FINAL`` when the gateway closed the tools."""
        self.warned = self.warned or MARK in json.dumps(body).lower()
        if not closed:
            return None
        self.closed += 1
        return self.finish(FINAL)

    def propose(self, results: list[str]) -> Call | str:
        """The script's next call, or the model's last word when the script is done (``DONE``)
        or a loop's script ran ``LIMIT`` calls unstopped (``GAVE_UP``)."""
        call = self.scenario.step(Turn(self.proposed, results, self.warned, self.work))
        if call is None:
            return self.finish(DONE)
        if not self.scenario.calls and self.proposed >= LIMIT:  # a loop's script never ends
            return self.finish(GAVE_UP)
        self.proposed += 1
        return call

    def finish(self, text: str) -> str:
        """The model's last word; it also tells a background job of the run to stop (the job
        watches for ``.stop``), so the CLI has no running job to wait for."""
        (self.work / ".stop").touch()
        return text


@dataclass
class Outcome:
    """What a run did: the CLI's exit and output, the conversation of every upstream request, read
    with the CLI's protocol (``calls_in``: call id -> (name, input); ``results_in``: call id ->
    result text of the calls the CLI ran, the gateway's observations left out), and the audit."""

    returncode: int
    stdout: str
    stderr: str
    conversations: list[Any]
    audit: list[dict[str, Any]]
    model: TurnModel
    calls_in: Callable[[Any], dict[str, Call]]
    results_in: Callable[[Any], dict[str, str]]
    shown: tuple[int | None, int | None] = (None, 100)  # the part of a result the story shows (a slice)

    def executed(self, counted: Counted | None = None) -> list[tuple[str, Any, str]]:
        """(name, input, result) of each call the CLI ran, in order, over the whole run."""
        calls: dict[str, Call] = {}
        results: dict[str, str] = {}
        for conversation in self.conversations:
            calls.update(self.calls_in(conversation))
            results.update(self.results_in(conversation))
        ran = [(*calls[i], text) for i, text in results.items() if i in calls]
        return [r for r in ran if counted is None or counted(r[0], r[1])]

    def executed_at_first_warning(self, counted: Counted | None = None) -> int | None:
        """How many calls had run when a gateway text first reached the model (None: never)."""
        for conversation in self.conversations:
            if MARK in json.dumps(conversation).lower():
                calls = self.calls_in(conversation)
                return sum(
                    1 for i in self.results_in(conversation) if i in calls and (counted is None or counted(*calls[i]))
                )
        return None

    @property
    def warned(self) -> bool:
        return self.model.warned

    @property
    def ended_requests(self) -> int:
        """Client requests the gateway ended (terminate): more than one is the client retrying."""
        return len({e.get("request_id") for e in self.audit if e.get("action") == "terminate"})

    def story(self) -> str:
        """What happened, for an assertion message: the calls, the gateway's actions, the ends."""
        lines = [
            f"exit {self.returncode}; {len(self.conversations)} upstream requests; "
            f"{self.model.proposed} calls proposed; tools closed {self.model.closed} times"
        ]
        lines += [
            f"  ran {name} {json.dumps(args)[:120]} -> {text[slice(*self.shown)]!r}"
            for name, args, text in self.executed()
        ]
        lines += [f"  gateway {e.get('action')} by {e.get('detector')} on {e.get('tool')}" for e in self.audit]
        lines += [f"stdout: {self.stdout[-600:]!r}", f"stderr: {self.stderr[-600:]!r}"]
        return "\n".join(lines)


def cycling(make: Callable[[Turn], list[Call]]) -> Step:
    """A loop: the model's call number ``index`` is ``make(turn)[index % len]``, forever."""

    def step(turn: Turn) -> Call:
        calls = make(turn)
        return calls[turn.index % len(calls)]

    return step


def scripted(make: Callable[[Turn], list[Call]]) -> Step:
    """A healthy run: the calls of ``make(turn)`` in order, then the model is done."""

    def step(turn: Turn) -> Call | None:
        calls = make(turn)
        return calls[turn.index] if turn.index < len(calls) else None

    return step


def first_then(first: Step, then: Step) -> Step:
    """The call ``first`` (a set-up step), then the loop ``then`` counted from zero."""

    def step(turn: Turn) -> Call | None:
        if turn.index == 0:
            return first(turn)
        return then(Turn(turn.index - 1, turn.results, turn.warned, turn.work))

    return step


# The scripts' shell commands and files: each CLI wraps a command line in its own shell tool.
FAILING_TEST = "def test_total():\n    assert 2 + 2 == 5\n"
NOTES = "first\nsecond\nthird\n"
LONG = "".join(f"line {n}: the quick brown fox {n * 7}\n" for n in range(1, 201))
CALC = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a ** b\n"
CHECK = (
    "import sys\nfrom calc import add, mul\nbad = [n for n, ok in (('add', add(2, 3) == 5), "
    "('mul', mul(2, 3) == 6)) if not ok]\nprint('failing: ' + ', '.join(bad) if bad else 'all passed')\n"
    "sys.exit(1 if bad else 0)\n"
)
PAST_END_SEDS = [f"sed -n '{10 + 10 * k},{19 + 10 * k}p' notes.txt" for k in range(40)]
SCROLL_SEDS = [f"sed -n '{1 + 40 * k},{40 + 40 * k}p' long.txt" for k in range(5)]


def failing_test_runs(work: Path) -> list[str]:
    """The same failing test run, spelled eight ways."""
    return [
        "python -m pytest tests -q",
        "pytest tests/",
        "python3 -m pytest -x tests",
        f"cd {work} && pytest tests",
        "python -m pytest tests",
        "pytest -q tests",
        "python -m pytest tests/test_total.py",
        f"cd {work} && python -m pytest -q",
    ]


def paced_poll(shell: Callable[[str], Call]) -> Step:
    """Polls every second; the job is done by the sixth look, and the model stops when it says so."""

    def step(turn: Turn) -> Call | None:
        if "done" in turn.last:
            return None
        if turn.index == 5:
            (turn.work / "status.txt").write_text("done\n")
        return shell("sleep 1 && cat status.txt")

    return step


def moving_poll(shell: Callable[[str], Call]) -> Step:
    """The job's progress moves on between two looks; done at the eighth."""

    def step(turn: Turn) -> Call | None:
        if "done" in turn.last:
            return None
        progress = "done: 8 of 8 steps\n" if turn.index == 7 else f"running: {turn.index + 1} of 8 steps\n"
        (turn.work / "progress.txt").write_text(progress)
        return shell("cat progress.txt")

    return step
