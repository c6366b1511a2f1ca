"""The development corpus (``../shared/corpus``: 238 real agent runs, labelled) replayed through a
real gateway under the shipped default policy: each run's requests posted as its agent sent them
(the conversation before each of its model's messages, and the whole conversation when it ends
with a result, with the tools it declared), a scripted model answering each with the message the
recording holds next.
What the gateway did is read from its answers (``x-loopguard-action``): no healthy run is ever
stopped (refused or ended), and every loop is warned. Skipped where the corpus is not beside the
repository (``LOOPGUARD_CORPUS`` names another copy)."""

from __future__ import annotations

import asyncio
import json
import lzma
import os
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support.process import ROOT
from support.servers import serve
from support.upstream import Reply

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app

CORPUS = Path(os.environ.get("LOOPGUARD_CORPUS") or ROOT.parent / "shared" / "corpus" / "runs.jsonl.xz")
pytestmark = pytest.mark.skipif(not CORPUS.exists(), reason=f"the development corpus is not at {CORPUS}")
AT_ONCE = 8  # runs in flight together: the gateway serves a fleet
STOPS = ("reject", "terminate")


def recorded(messages: list[dict[str, Any]], request: list[dict[str, Any]]) -> dict[str, Any]:
    """The message the recording holds after the part of ``request`` it shares with it (the
    gateway may add its own after them: a warning, a refused call shown to the model)."""
    shared = 0
    while shared < min(len(messages), len(request)) and _same(messages[shared], request[shared]):
        shared += 1
    following = messages[shared] if shared < len(messages) else None
    return following if following is not None and following["role"] == "assistant" else {"content": "done"}


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("role") == b.get("role") and a.get("content") == b.get("content")


def model(runs: dict[str, dict[str, Any]]) -> Starlette:
    """A chat-completions upstream answering each run (its id is the request's model) with the
    message its recording holds next."""

    async def complete(request: Request) -> Response:
        body = orjson.loads(await request.body())
        run = runs[body["model"]]
        following = recorded(run["messages"], body["messages"])
        calls = [(c["function"]["name"], c["function"]["arguments"]) for c in following.get("tool_calls") or []]
        reply = Reply(content=following.get("content") if not calls else None, tool_calls=calls)
        return Response(orjson.dumps(reply.completion(body["model"])), media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", complete, methods=["POST"])])


def requests(run: dict[str, Any]) -> list[int]:
    """Where the run's requests end: before each of its model's messages, and at its end when
    the conversation ends with what the agent sent (the gateway judged that request too)."""
    messages = run["messages"]
    ends = [k for k, m in enumerate(messages) if m["role"] == "assistant" and k > 0]
    return ends + ([len(messages)] if messages and messages[-1]["role"] != "assistant" else [])


async def replay(client: httpx.AsyncClient, run: dict[str, Any]) -> list[str]:
    """The gateway's action on each of the run's requests, until one ends the run."""
    actions = []
    extra = {"tools": run["tools"]} if run.get("tools") else {}
    for end in requests(run):
        body = orjson.dumps({"model": run["id"], "messages": run["messages"][:end], **extra})
        answer = await client.post("/v1/chat/completions", content=body, headers={"x-loopguard-session": run["id"]})
        assert answer.status_code == 200, answer.text
        actions.append(answer.headers.get("x-loopguard-action", ""))
        if actions[-1] == "terminate":
            break
    return actions


@pytest.fixture(scope="module")
def corpus() -> list[dict[str, Any]]:
    with lzma.open(CORPUS, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


@pytest.fixture(scope="module")
def judged(corpus: list[dict[str, Any]]) -> dict[str, list[str]]:
    runs = {run["id"]: run for run in corpus}
    with serve(model(runs)) as upstream:
        config = Config.model_validate({"upstream": {"base_url": upstream + "/v1"}})
        with serve(build_app(config), **SERVER_OPTIONS) as gateway:
            return asyncio.run(_all(gateway, corpus))


async def _all(gateway: str, corpus: list[dict[str, Any]]) -> dict[str, list[str]]:
    headers = {"authorization": "Bearer sk-corpus", "content-type": "application/json"}
    client = httpx.AsyncClient(base_url=gateway, headers=headers, timeout=60)
    gate = asyncio.Semaphore(AT_ONCE)

    async def one(run: dict[str, Any]) -> tuple[str, list[str]]:
        async with gate:
            return run["id"], await replay(client, run)

    try:
        return dict(await asyncio.gather(*(one(run) for run in corpus)))
    finally:
        await client.aclose()


def test_no_healthy_run_is_stopped(corpus, judged):
    stopped = [run["id"] for run in corpus if run["label"] == "healthy" and set(STOPS) & set(judged[run["id"]])]
    assert stopped == []


def test_every_loop_is_warned(corpus, judged):
    loops = [run["id"] for run in corpus if run["label"] == "loop"]
    assert loops and [run for run in loops if not set(judged[run]) - {"pass", ""}] == []


def test_every_run_was_replayed_to_its_end_or_its_stop(corpus, judged):
    for run in corpus:
        sent = judged[run["id"]]
        assert len(sent) == len(requests(run)) or sent[-1] == "terminate", run["id"]
