"""Recorded traffic of the real coding-agent CLIs, one fixture per client version, read back.

A fixture (``tests/fixtures/agents/<client>/<version>.json``, written by
``tests/fixtures/agents/record.py``) holds what one CLI version sent when it was driven through the
same steps (``support.clis_record.STEPS``): its User-Agent, the route it posted to, and its last
request body, whose conversation holds every earlier one (these CLIs resend the whole
conversation each time). Each step is one round: the model's call, then the CLI's result.

``Wire`` reads a body of one protocol as a head (what precedes the first call: the prompt) and its
rounds, and writes bodies back from them: the requests the CLI sent one after another are the head
plus its first k rounds, and new runs are built from the real rounds (a round repeated with fresh
call ids, or with its command and output replaced), so every result keeps the version's own
envelope.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "agents"
WORK = "/work/repo"  # the recorded work directory, whatever it was on the recording machine
HOME = "/home/user"  # the recorded HOME
ID_KEYS = ("id", "tool_call_id", "tool_use_id", "call_id")

Item = dict[str, Any]


@dataclass(frozen=True)
class Wire:
    """One protocol's request bodies: where the conversation is (``items``), which entries the
    model wrote (``model_side``), the declared tools, and how the client authenticates."""

    name: str
    items: str
    model_side: Callable[[Item], bool]
    calls: Callable[[Item], bool]  # a model entry that calls a tool
    tools: Callable[[dict[str, Any]], dict[str, Any]]  # tool name -> its parameters' schema
    auth: Callable[[], dict[str, str]]

    def split(self, body: dict[str, Any]) -> tuple[list[Item], list[list[Item]]]:
        """(head, rounds): the entries before the model's first call, then each run of the
        model's entries that calls a tool with the client's entries that follow it. A reply
        without a call (an acknowledgement the harness scripted, a final answer) stays with
        what came before it."""
        runs: list[tuple[bool, list[Item]]] = []
        for item in body.get(self.items) or []:
            model = self.model_side(item)
            if not runs or runs[-1][0] != model:
                runs.append((model, []))
            runs[-1][1].append(item)
        head: list[Item] = []
        rounds: list[list[Item]] = []
        for model, items in runs:
            if model and any(self.calls(i) for i in items):
                rounds.append([])
            (rounds[-1] if rounds else head).extend(items)
        return head, rounds

    def body(self, like: dict[str, Any], head: list[Item], rounds: list[list[Item]]) -> dict[str, Any]:
        """``like`` with its conversation made of ``head`` and ``rounds``."""
        out = dict(like)
        out[self.items] = [*head, *(item for r in rounds for item in r)]
        return out


def _chat_tools(body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for tool in body.get("tools") or []:
        function = tool.get("function") or {}
        if function.get("name"):
            out[function["name"]] = function.get("parameters") or {}
    return out


def _anthropic_tools(body: dict[str, Any]) -> dict[str, Any]:
    return {t["name"]: t.get("input_schema") or {} for t in body.get("tools") or [] if t.get("name")}


def _responses_tools(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for tool in body.get("tools") or []:
        if tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                out[inner.get("name", "")] = inner.get("parameters") or {}
        elif tool.get("name"):
            out[tool["name"]] = tool.get("parameters") or {"freeform": tool.get("type") == "custom"}
    return out


def _gemini_tools(body: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for tool in body.get("tools") or []:
        for declaration in tool.get("functionDeclarations") or []:
            out[declaration["name"]] = declaration.get("parametersJsonSchema") or declaration.get("parameters") or {}
    return out


_RESPONSES_CALLS = ("function_call", "custom_tool_call", "local_shell_call")
_RESPONSES_MODEL = (*_RESPONSES_CALLS, "reasoning")
# A tool call written in a chat reply's text: XML tags (Cline before native tools, Roo Code), or a
# fenced shell block (mini-SWE-agent in text mode).
_XML_CALL = re.compile(r"<([a-z_]+)>.*?</\1>|```[\w.-]*(?:bash|sh)[\w.-]*\n", re.DOTALL)


def _chat_calls(message: Item) -> bool:
    content = message.get("content")
    text = content if isinstance(content, str) else json.dumps(content or "")
    return bool(message.get("tool_calls")) or bool(_XML_CALL.search(text))


def _blocks(item: Item, key: str) -> list[Any]:
    value = item.get(key)
    return value if isinstance(value, list) else []


WIRES = {
    "chat": Wire(
        "chat",
        "messages",
        lambda m: m.get("role") == "assistant",
        _chat_calls,
        _chat_tools,
        lambda: {"authorization": "Bearer sk-recorded"},
    ),
    "anthropic": Wire(
        "anthropic",
        "messages",
        lambda m: m.get("role") == "assistant",
        lambda m: any(isinstance(b, dict) and b.get("type") == "tool_use" for b in _blocks(m, "content")),
        _anthropic_tools,
        lambda: {"x-api-key": "sk-ant-recorded", "anthropic-version": "2023-06-01"},
    ),
    "responses": Wire(
        "responses",
        "input",
        lambda i: i.get("type") in _RESPONSES_MODEL or i.get("role") == "assistant",
        lambda i: i.get("type") in _RESPONSES_CALLS,
        _responses_tools,
        lambda: {"authorization": "Bearer sk-recorded"},
    ),
    "gemini": Wire(
        "gemini",
        "contents",
        lambda c: c.get("role") == "model",
        lambda c: any(isinstance(p, dict) and "functionCall" in p for p in _blocks(c, "parts")),
        _gemini_tools,
        lambda: {"x-goog-api-key": "gm-recorded"},
    ),
}


# -- one fixture ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recording:
    """One client version's recorded session: ``steps[k]`` is the kind of round ``k``."""

    client: str  # the profile that must read it
    version: str
    variant: str  # "" or what else was chosen (a model family, a text mode)
    wire: Wire
    path: str  # the route it posted to, with its query
    headers: dict[str, str]  # the identifying headers it sent (User-Agent)
    body: dict[str, Any]
    steps: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.client}-{self.version}{'-' + self.variant if self.variant else ''}"

    def parts(self) -> tuple[list[Item], list[list[Item]]]:
        head, rounds = self.wire.split(self.body)
        assert len(rounds) == len(self.steps), (self.name, len(rounds), self.steps)
        return head, rounds

    def sent(self) -> Iterator[dict[str, Any]]:
        """The requests the CLI sent in the session, in order: the prompt, then after each round."""
        head, rounds = self.parts()
        for k in range(len(rounds) + 1):
            yield self.wire.body(self.body, head, rounds[:k])

    def rounds_of(self, kind: str) -> list[list[Item]]:
        """The recorded rounds of one step kind (``shell_fail``: each failing command)."""
        _, rounds = self.parts()
        return [r for r, k in zip(rounds, self.steps) if k == kind]

    def run(self, rounds: list[list[Item]]) -> list[dict[str, Any]]:
        """The requests a CLI of this version sends for a run of ``rounds`` after its prompt:
        one per round, each with the conversation so far."""
        head, _ = self.parts()
        return [self.wire.body(self.body, head, rounds[: k + 1]) for k in range(len(rounds))]


def load(path: Path) -> Recording:
    data = json.loads(path.read_text(encoding="utf-8"))
    return Recording(
        data["client"],
        data["version"],
        data.get("variant", ""),
        WIRES[data["wire"]],
        data["path"],
        data["headers"],
        data["body"],
        tuple(data["steps"]),
    )


def recordings() -> list[Recording]:
    """Every checked-in session recording, by client then version."""
    return [load(p) for p in sorted(FIXTURES.glob("*/*.json")) if not p.name.endswith(SCENARIOS)]


SCENARIOS = ".scenarios.json"


@dataclass(frozen=True)
class ScenarioRun:
    """One loop or healthy look-alike as a client version ran it (support.clis_scenarios): its
    rounds, sent after its session recording's head."""

    recording: Recording
    name: str
    loop: bool
    rounds: list[list[Item]]
    # Why a run scripted as healthy did not go as scripted (the CLI's edits never reached the
    # disk, so its check failed the same way to the end): it is held to "warned, never stopped".
    stuck: str = ""

    @property
    def id(self) -> str:
        return f"{self.recording.name}-{self.name}"


def scenario_runs() -> list[ScenarioRun]:
    """Every recorded scenario run, with the session recording of its version."""
    sessions = {(r.client, r.version, r.variant): r for r in recordings()}
    out = []
    for path in sorted(FIXTURES.glob(f"*/*{SCENARIOS}")):
        data = json.loads(path.read_text(encoding="utf-8"))
        recording = sessions[(data["client"], data["version"], data.get("variant", ""))]
        out += [
            ScenarioRun(recording, s["name"], s["loop"], s["rounds"], s.get("stuck", "")) for s in data["scenarios"]
        ]
    return out


# -- new rounds from recorded ones --------------------------------------------------------------


def renamed(round_: list[Item], suffix: str) -> list[Item]:
    """``round_`` with every call id made unique by ``suffix`` (its call and its result alike)."""

    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: (v + suffix if k in ID_KEYS and isinstance(v, str) and v else walk(v)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(copy.deepcopy(round_))


def replaced(round_: list[Item], swaps: dict[str, str]) -> list[Item]:
    """``round_`` with each text of ``swaps`` replaced wherever it is written (the call's
    command, the command echoed in the envelope, the output), also inside a JSON text (a result
    that is a JSON document: Codex's ``shell``, Cline 3's lists)."""
    escaped = {json.dumps(old)[1:-1]: json.dumps(new)[1:-1] for old, new in swaps.items()}

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            for old, new in [*swaps.items(), *escaped.items()]:
                value = value.replace(old, new)
            return value
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return walk(round_)


def cycled(rounds: list[list[Item]], count: int) -> list[list[Item]]:
    """``count`` rounds taking ``rounds`` in turn, each with call ids of its own."""
    return [renamed(rounds[k % len(rounds)], f"-{k}") for k in range(count)]
