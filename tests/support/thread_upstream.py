"""A scripted Anthropic upstream that keeps message threads, with the API's thread rules.

``thread: {"type": "create"}`` stores the conversation (its ``system`` and ``tools`` included)
under the reply's id; ``thread: {"type": "continue", "previous_message_id": ...}`` resumes it
with only the new messages, and:
- an unknown id is ``thread_not_found`` (404);
- a message already continued is ``thread_already_continued`` (400): a thread never forks;
- a continue that repeats ``system`` or ``tools`` is refused (400): the thread keeps those;
- a thread request without the threads beta header is refused (400).
Every conversation, threaded or not, must answer each ``tool_use`` with a ``tool_result`` in the
next user message (400 otherwise), as the API does. The responder sees the whole conversation
(``messages``, ``system``, ``tools``), so a looping model is one function. The ``threads``
fixture starts one with a gateway in front of it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import orjson
import pytest
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from gateway.config import Config
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from support.anthropic_upstream import AnthropicUpstream, Said
from support.policies import ladder_policy
from support.servers import serve

BETA = "message-threads-2026-08-12"


class ThreadUpstream(AnthropicUpstream):
    def __init__(self, responder: Callable[[dict], Said]) -> None:
        super().__init__(responder)
        self.threads: dict[str, dict[str, Any]] = {}  # reply id -> the thread up to and including it
        self.continued: set[str] = set()
        self.rejections: list[str] = []  # error codes answered, in order

    async def _messages(self, request: Request) -> Response:
        body = await self._record(request)
        thread = body.get("thread")
        whole, refusal = self._resolve(body, thread, request.headers.get("anthropic-beta", ""))
        if refusal is not None:
            return refusal
        unanswered = _unanswered(whole["messages"])
        if unanswered:
            return self._refuse(400, "invalid_request_error", f"tool_use ids without tool_result: {unanswered}", None)
        said = self.responder(whole)
        if isinstance(body.get("tool_choice"), dict) and body["tool_choice"].get("type") == "none":
            said = Said(text=said.text or "I will stop calling tools now.")
        if said.status != 200:
            return self._refuse(said.status, said.error_type, "scripted", None)
        model = body.get("model", "claude-test")
        message = said.message(model, said.blocks())
        if isinstance(thread, dict):
            if thread.get("type") == "continue":
                self.continued.add(thread["previous_message_id"])
            self.threads[message["id"]] = {
                **whole,
                "messages": [*whole["messages"], {"role": "assistant", "content": message["content"]}],
            }
        if body.get("stream"):
            events = _events(message)
            self.sent.append(b"".join(events))
            return StreamingResponse(iter(events), media_type="text/event-stream")
        content = json.dumps(message).encode()
        self.sent.append(content)
        return Response(content, media_type="application/json")

    def _resolve(self, body: dict[str, Any], thread: Any, betas: str) -> tuple[dict[str, Any], Response | None]:
        messages = body.get("messages") or []
        if thread is None:
            return {**body, "messages": messages}, None
        if BETA not in betas:
            return {}, self._refuse(400, "invalid_request_error", "thread needs the threads beta", None)
        if thread.get("type") == "create":
            return {**body, "messages": messages}, None
        previous = thread.get("previous_message_id")
        if previous not in self.threads:
            return {}, self._refuse(404, "not_found_error", f"thread {previous} not found", "thread_not_found")
        if previous in self.continued:
            return {}, self._refuse(
                400, "invalid_request_error", f"{previous} was already continued", "thread_already_continued"
            )
        if "system" in body or "tools" in body:
            return {}, self._refuse(400, "invalid_request_error", "system and tools are the thread's", None)
        held = self.threads[previous]
        return {
            **body,
            "system": held.get("system"),
            "tools": held.get("tools"),
            "messages": [*held["messages"], *messages],
        }, None

    def _refuse(self, status: int, kind: str, message: str, code: str | None) -> Response:
        error: dict[str, Any] = {"type": kind, "message": message}
        if code is not None:
            error["details"] = {"error_code": code}
        self.rejections.append(code or kind)
        return Response(orjson.dumps({"type": "error", "error": error}), status, media_type="application/json")


def _unanswered(messages: list[dict[str, Any]]) -> list[str]:
    missing: list[str] = []
    for position, message in enumerate(messages):
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            continue
        asked = [b["id"] for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        following = messages[position + 1]["content"] if position + 1 < len(messages) else []
        answered = (
            {b.get("tool_use_id") for b in following if isinstance(b, dict)} if isinstance(following, list) else set()
        )
        if position + 1 < len(messages):
            missing += [ident for ident in asked if ident not in answered]
    return missing


def _events(message: dict[str, Any]) -> list[bytes]:
    said = Said()
    opening = {**message, "content": [], "stop_reason": None, "usage": {"input_tokens": 100, "output_tokens": 1}}
    out = [_event({"type": "message_start", "message": opening})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            out.append(
                _event({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
            )
            for i in range(0, len(block["text"]), 8):
                out.append(
                    _event(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "text_delta", "text": block["text"][i : i + 8]},
                        }
                    )
                )
        else:
            out.append(_event({"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}))
            text = json.dumps(block["input"])
            for i in range(0, len(text), said.split):
                out.append(
                    _event(
                        {
                            "type": "content_block_delta",
                            "index": index,
                            "delta": {"type": "input_json_delta", "partial_json": text[i : i + said.split]},
                        }
                    )
                )
        out.append(_event({"type": "content_block_stop", "index": index}))
    out.append(
        _event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 20},
            }
        )
    )
    out.append(_event({"type": "message_stop"}))
    return out


def _event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


@pytest.fixture
def threads(tmp_path):
    """Start a thread-keeping upstream and a gateway in front of it on the ladder policy;
    returns (upstream, gateway base URL). Shared by the Python and Node SDK thread tests."""
    contexts = []

    def start(responder, **config):
        upstream = ThreadUpstream(responder)
        ctx = serve(upstream.app)
        url = ctx.__enter__()
        contexts.append(ctx)
        policy = tmp_path / "policy.yaml"
        policy.write_text(ladder_policy())
        raw = {"upstream": {"base_url": "http://127.0.0.1:9/v1", "anthropic_base_url": url}, **config}
        ctx = serve(build_app(Config.model_validate(raw), policies=PolicyHolder(policy)), **SERVER_OPTIONS)
        gateway = ctx.__enter__()
        contexts.append(ctx)
        return upstream, gateway

    yield start
    for ctx in reversed(contexts):
        ctx.__exit__(None, None, None)
