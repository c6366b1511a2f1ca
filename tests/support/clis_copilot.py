"""GitHub Copilot CLI through a real gateway, and the scripted chat-completions model it (and Cline,
tests/support/clis_cline.py) talks to.

Copilot CLI runs headless as ``copilot -p PROMPT --allow-all-tools`` with its "bring your own key"
provider pointed at the gateway (``COPILOT_PROVIDER_BASE_URL``; ``COPILOT_OFFLINE=true`` so it
never reaches GitHub: no login, telemetry or update check). It speaks chat completions, streamed
unless ``--stream off``. Its shell tool ``bash`` ends every result with
``<shellId: N completed with exit code C>``, N one higher each call.

The scripted model is a *step* function: given how many of its calls ran and their results, the
next call ``(tool, args)`` or None when it is done. The model answers ``FINAL`` whenever the
gateway closes the tools (``tool_choice: none``), ``DONE`` when its script ends. The steps both
CLIs' tests build (the same call again, a new call each turn, a poll until done) and the work
directory they run in are here too.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.cli_runs import (
    MAX_EXECUTED,
    ChatUpstream,
    policy_file,
    read_audit,
    start_gateway,
    text_of,
    tools_closed,
    write_files,
)
from support.clis import find_cli
from support.servers import serve
from support.upstream import Reply

FINAL = "FINAL ANSWER: the same step kept coming back, so I stopped here."
DONE = "DONE: every step of the plan ran."
LOOPGUARD = "[LoopGuard"  # how the gateway's warnings and notes to the model begin
VETO = "[loopguard]"  # how the observation of a call the gateway refused begins

Call = tuple[str, dict[str, Any]]
Step = Callable[[int, list[str]], Call | None]


def results(body: dict[str, Any]) -> list[str]:
    """The tool results of the conversation that really ran: a refused call's observation (the
    gateway's, not the agent's) is left out."""
    found = [text_of(m.get("content")) for m in body.get("messages", []) if m.get("role") == "tool"]
    return [text for text in found if not text.startswith(VETO)]


def warned(body: dict[str, Any]) -> bool:
    """A LoopGuard text (warning or note) reached the model in this request."""
    return any(LOOPGUARD in text_of(m.get("content")) for m in body.get("messages", []))


def responder(step: Step) -> Callable[[dict[str, Any]], Reply]:
    """The looping model: the script's next call, ``FINAL`` once the tools are closed, ``DONE``
    when the script ends."""

    def respond(body: dict[str, Any]) -> Reply:
        if tools_closed(body):
            return Reply(content=FINAL)
        seen = results(body)
        call = step(len(seen), seen)
        if call is None:
            return Reply(content=DONE)
        name, args = call
        return Reply(tool_calls=[(name, json.dumps(args))])

    return respond


class ChatModel(ChatUpstream):
    """The scripted chat-completions model; ``/v1/models`` lists the model Copilot CLI is told
    to use."""

    def __init__(self, step: Step) -> None:
        super().__init__(responder(step), "gpt-4.1")

    def executed(self) -> list[str]:
        """The results of the calls the agent ran, from the longest conversation seen."""
        return max((results(b) for b in self.bodies), key=len, default=[])

    def warned(self) -> bool:
        return any(warned(b) for b in self.bodies)


@dataclass
class Stack:
    """A scripted model behind a real gateway; ``audit`` is the gateway's intervention log."""

    model: ChatModel
    url: str
    audit: Path

    def interventions(self) -> list[dict[str, Any]]:
        """The gateway's ``loop_intervention`` audit events, in order."""
        return read_audit(self.audit)

    def actions(self) -> list[str]:
        """What the gateway did, in order: ``warn:no_progress``, ``terminate:error_repeat`` ..."""
        return [f"{e.get('action')}:{e.get('detector')}" for e in self.interventions()]

    def terminated_requests(self) -> set[str]:
        """The client requests the gateway answered with a terminate: a client that retries the
        termination sends the same conversation again and is terminated again."""
        return {e["request_id"] for e in self.interventions() if e.get("action") == "terminate"}

    def check_ended(self, run: subprocess.CompletedProcess) -> None:
        """A loop ends with the model's own answer within ``MAX_EXECUTED`` executed calls; the
        CLI exits 0."""
        executed = self.model.executed()
        assert run.returncode == 0, run.stderr[-2000:]
        assert len(executed) <= MAX_EXECUTED, (len(executed), self.actions())
        assert FINAL in run.stdout, (run.stdout[-1500:], self.actions())

    def check_untouched(self, run: subprocess.CompletedProcess, calls: int) -> None:
        """A healthy look-alike: ``calls`` of its calls ran, the gateway did nothing and no
        gateway text reached the model; the CLI exits 0."""
        assert run.returncode == 0, run.stderr[-2000:]
        assert len(self.model.executed()) == calls, self.actions()
        assert not self.model.warned(), self.actions()
        assert self.interventions() == []


@contextmanager
def guarded(step: Step, tmp: Path, policy_text: str | None = None) -> Iterator[Stack]:
    """The scripted model on loopback, a real gateway in front of it (the shipped default policy
    unless ``policy_text``), its interventions appended to ``tmp/audit.jsonl``."""
    model, audit = ChatModel(step), tmp / "audit.jsonl"
    with ExitStack() as stack:
        upstream = stack.enter_context(serve(model.app))
        url = start_gateway(stack, {"base_url": upstream + "/v1"}, audit, policy_file(tmp, policy_text))
        yield Stack(model, url, audit)


@contextmanager
def unguarded(step: Step, tmp: Path) -> Iterator[Stack]:
    """The scripted model alone, the CLI pointed straight at it: what the agent does without the
    gateway, to compare a healthy run's calls with."""
    model = ChatModel(step)
    with serve(model.app) as url:
        yield Stack(model, url, tmp / "no-audit.jsonl")


# -- scripts: ``step(n, seen)`` with n the calls that ran so far, seen their results -------------


def repeating(call: Call, limit: int = 30) -> Step:
    """The same call every turn, byte for byte."""
    return lambda n, seen: call if n < limit else None


def numbered(make: Callable[[int], Call], count: int) -> Step:
    """Call ``make(n)`` at turn n: a new call every turn, ``count`` of them."""
    return lambda n, seen: make(n) if n < count else None


def until_done(call: Call, limit: int = 30) -> Step:
    """The same call until its result says ``done``."""

    def step(n: int, seen: list[str]) -> Call | None:
        if seen and "done" in seen[-1]:
            return None
        return call if n < limit else None

    return step


POLL = (
    "from pathlib import Path\n"
    "p = Path('count.txt'); n = int(p.read_text()) + 1 if p.exists() else 1; p.write_text(str(n))\n"
    "print('done' if n >= 8 else f'progress {n * 12}%')\n"
)  # done at the 8th poll, moving before


def workdir(tmp_path: Path, status: str) -> Path:
    """The scripts' work directory: ``status.txt``, the poll script, thirty small files."""
    files = {"status.txt": status, "poll.py": POLL, **{f"f{i}.txt": f"file {i}: {'x' * i}\n" for i in range(30)}}
    return write_files(tmp_path / "work", files)


def copilot_env(gateway: str, home: Path) -> dict[str, str]:
    """Copilot CLI on its custom OpenAI-compatible provider at the gateway, offline otherwise."""
    home.mkdir(parents=True, exist_ok=True)
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    return {
        **keep,
        "HOME": str(home),
        "COPILOT_HOME": str(home / ".copilot"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": gateway + "/v1",
        "COPILOT_PROVIDER_TYPE": "openai",
        "COPILOT_PROVIDER_WIRE_API": "completions",
        "COPILOT_PROVIDER_API_KEY": "sk-copilot-test",
        "COPILOT_MODEL": "gpt-4.1",
        "COPILOT_AUTO_UPDATE": "false",
        "CI": "1",
        "NO_COLOR": "1",
    }


def run_copilot(
    prompt: str, work: Path, home: Path, gateway: str, stream: bool = True, timeout: int = 170
) -> subprocess.CompletedProcess:
    """``copilot -p PROMPT`` headless in ``work``, every tool allowed, through the gateway."""
    command = [
        find_cli("copilot") or "copilot",
        "-p",
        prompt,
        "--allow-all-tools",
        "-C",
        str(work),
        "--disable-client-telemetry",
        "--no-auto-update",
        "--stream",
        "on" if stream else "off",
        "--log-dir",
        str(home / "logs"),
    ]
    return subprocess.run(
        command, cwd=work, env=copilot_env(gateway, home), capture_output=True, text=True, timeout=timeout
    )
