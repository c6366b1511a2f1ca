"""A scripted upstream speaking the OpenAI Responses API (``POST /v1/responses``).

Like the real API it keeps each stored response (``store`` defaults to true) so a later request
may continue it with ``previous_response_id``, and it refuses a conversation in which a function
call has no output (``No tool output found for function call ...``): a gateway that withholds a
call must answer it before the chain goes on. A ``responder`` decides each reply from the whole
conversation (the chain resolved), so a looping model is one function.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.policies import ladder_policy
from support.responses_wire import encode, function_call, message, reasoning, response, stream_events
from support.servers import serve

_ids = itertools.count(1)
CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


@dataclass
class Answer:
    """One model turn: optional reasoning summary and text, then tool calls as (name, arguments)
    pairs; ``raw_stream``: the exact bytes a streamed request gets instead."""

    text: str | None = None
    calls: list[tuple[str, str]] = field(default_factory=list)
    pieces: int = 3  # streamed text and arguments in this many deltas each
    chunk_delay: float = 0.0  # seconds between streamed events (a slow model, for timeouts)
    thought: str | None = None
    raw_stream: bytes | None = None

    def output(self) -> list[dict[str, Any]]:
        n = next(_ids)
        items = [reasoning(f"rs_{n}", self.thought)] if self.thought else []
        items += [message(self.text, f"msg_{n}")] if self.text else []
        items += [
            function_call(name, args, f"call_{n}_{i}", f"fc_{n}_{i}") for i, (name, args) in enumerate(self.calls)
        ]
        return items


Responder = Callable[[list[dict[str, Any]], dict[str, Any]], Answer]  # (conversation, request) -> answer


class ResponsesUpstream:
    def __init__(self, responder: Responder) -> None:
        self.responder = responder
        self.requests: list[dict[str, Any]] = []  # raw body, parsed body, headers, path, method
        self.stored: dict[str, list[dict[str, Any]]] = {}  # response id -> conversation incl. output
        # Conversations API: conversation id -> its items (input and output of each response)
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.app = Starlette(
            routes=[
                Route("/v1/responses", self._create, methods=["POST"]),
                Route("/v1/conversations", self._new_conversation, methods=["POST"]),
                Route("/v1/{rest:path}", self._other, methods=["GET", "POST", "DELETE"]),
            ]
        )

    async def _new_conversation(self, request: Request) -> Response:
        body = orjson.loads(await request.body() or b"{}")
        ident = f"conv_up{next(_ids)}"
        self.conversations[ident] = list(body.get("items") or [])
        return Response(
            orjson.dumps({"id": ident, "object": "conversation", "created_at": 1741476542, "metadata": {}}),
            media_type="application/json",
        )

    async def _create(self, request: Request) -> Response:
        raw = await request.body()
        body = orjson.loads(raw)
        self.requests.append(
            {"raw": raw, "json": body, "headers": dict(request.headers), "path": request.url.path, "method": "POST"}
        )
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.stored:
            return _error(404, f"Previous response with id '{previous}' not found.", "previous_response_not_found")
        items = body["input"] if isinstance(body["input"], list) else [{"role": "user", "content": body["input"]}]
        talk = body.get("conversation")
        talk = talk.get("id") if isinstance(talk, dict) else talk
        if talk is not None and (previous is not None or talk not in self.conversations):
            return _error(404 if talk not in self.conversations else 400, f"Conversation '{talk}' not usable.", None)
        conversation = [*self.stored.get(previous, []), *self.conversations.get(talk, []), *items]
        missing = _unanswered(conversation)
        if missing:
            return _error(400, f"No tool output found for function call {missing}.", None)
        answer = self.responder(conversation, body)
        if body.get("tool_choice") == "none":  # the model may not call a tool: it answers
            answer = dataclasses.replace(answer, text=answer.text or "I will stop calling tools now.", calls=[])
        output = answer.output()
        response_id = f"resp_up{next(_ids)}"
        if body.get("store", True):
            self.stored[response_id] = [*conversation, *output]
        fields = {}
        if talk is not None:  # the input and the output join the conversation
            self.conversations[talk] = [*conversation, *output]
            fields["conversation"] = {"id": talk}
        if body.get("stream") and answer.raw_stream is not None:
            return StreamingResponse(_paced([answer.raw_stream], 0), media_type="text/event-stream")
        if body.get("stream"):
            events = stream_events(output, response_id, pieces=answer.pieces)
            if fields:
                for event in events:
                    if isinstance(event.get("response"), dict):
                        event["response"].update(fields)
            return StreamingResponse(
                _paced([encode(e) for e in events], answer.chunk_delay), media_type="text/event-stream"
            )
        return Response(orjson.dumps(response(output, response_id, **fields)), media_type="application/json")

    async def _other(self, request: Request) -> Response:
        raw = await request.body()
        self.requests.append(
            {
                "raw": raw,
                "json": None,
                "headers": dict(request.headers),
                "path": request.url.path,
                "method": request.method,
            }
        )
        rest = request.path_params["rest"]
        if rest.startswith("responses/") and rest.removeprefix("responses/") in self.stored:
            ident = rest.removeprefix("responses/")
            if request.method == "DELETE":
                del self.stored[ident]
                return Response(
                    orjson.dumps({"id": ident, "object": "response", "deleted": True}), media_type="application/json"
                )
            return Response(orjson.dumps(response(self.stored[ident][-1:], ident)), media_type="application/json")
        return _error(404, "Not found", None)


async def _paced(events: list[bytes], delay: float) -> AsyncIterator[bytes]:
    for event in events:
        yield event
        if delay:
            await asyncio.sleep(delay)


def _unanswered(items: list[dict[str, Any]]) -> str | None:
    answered = {i.get("call_id") for i in items if isinstance(i, dict) and i.get("type") in OUTPUT_TYPES}
    for item in items:
        if isinstance(item, dict) and item.get("type") in CALL_TYPES and item.get("call_id") not in answered:
            return item.get("call_id")
    return None


def _error(status: int, text: str, code: str | None) -> Response:
    body = {"error": {"message": text, "type": "invalid_request_error", "param": "input", "code": code}}
    return Response(orjson.dumps(body), status_code=status, media_type="application/json")


def mentions_loopguard(conversation: list[dict[str, Any]]) -> bool:
    """Did the gateway write anything into the conversation (an anchor or an observation)?"""
    return any("[loopguard]" in orjson.dumps(item).decode().lower() for item in conversation)


def stubborn(tool: str = "read_file", args: str = '{"path": "a.txt"}') -> Responder:
    """Calls the same tool with the same arguments forever, whatever it is told."""
    return lambda conversation, body: Answer(calls=[(tool, args)])


def finishing(rounds: int, tool: str = "read_file") -> Responder:
    """A healthy agent: reads ``rounds`` different files, then answers."""

    def respond(conversation: list[dict[str, Any]], body: dict[str, Any]) -> Answer:
        done = sum(1 for i in conversation if i.get("type") == "function_call_output")
        if done >= rounds:
            return Answer("All files read: the retry limit is 3.")
        return Answer(calls=[(tool, f'{{"path": "file{done}.txt"}}')])

    return respond


@contextmanager
def guarded(
    responder: Responder, tmp_path: Path, policy_text: str | None = None
) -> Iterator[tuple[ResponsesUpstream, str]]:
    """(upstream, gateway URL): the gateway in front of a Responses upstream, behind the ladder
    policy (warn at 3, reject at 4, terminate at 5) unless told otherwise."""
    upstream = ResponsesUpstream(responder)
    with serve(upstream.app) as upstream_url:
        policy = tmp_path / "policy.yaml"
        policy.write_text(policy_text or ladder_policy())
        config = Config.model_validate({"upstream": {"base_url": upstream_url + "/v1"}})
        with serve(build_app(config, policies=PolicyHolder(policy)), **SERVER_OPTIONS) as url:
            yield upstream, url


@pytest.fixture
def start_responses(tmp_path):
    """(upstream, gateway URL) for a responder, behind the ladder policy (warn 3, reject 4, end 5)."""
    with ExitStack() as stack:
        yield lambda responder, policy=None: stack.enter_context(guarded(responder, tmp_path, policy))


def sdk(url: str) -> openai.OpenAI:
    """The openai SDK through the gateway at ``url``, without retries."""
    return openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=20)
