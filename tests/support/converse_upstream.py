"""A scripted Amazon Bedrock runtime speaking the Converse API: the "model" answers each request
from a responder.

It serves ``POST /model/{modelId}/converse`` (one JSON reply) and ``/converse-stream`` (AWS
event-stream frames as Bedrock sends them: ``messageStart``, text in pieces, each ``toolUse``
block's input as JSON fragments, ``messageStop``, ``metadata``; each payload padded with a
``p`` field as Bedrock's are). It refuses what Bedrock refuses (an unknown model id; tool blocks
without a ``toolConfig``; a blank text block; roles that do not alternate; tool results that do
not answer the calls before them) with Bedrock's error shape, and (``signed``) checks the SigV4
signature of every request over the exact path and bytes it received, with the scripted
credentials (``support.sigv4_check``: botocore's signer, recomputed). It records every request and the exact bytes of every answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from gateway.protocols.eventstream import CONTENT_TYPE, frame
from support import sigv4_check

PROFILE = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-haiku-20240307-v1:0"
CROSS_REGION = "us.anthropic.claude-3-haiku-20240307-v1:0"  # a system inference profile's id
MODELS = frozenset({"anthropic.claude-3-haiku-20240307-v1:0", "amazon.nova-pro-v1:0", CROSS_REGION, PROFILE})
MODEL = "anthropic.claude-3-haiku-20240307-v1:0"


@dataclass
class Said:
    """One scripted answer: text, then tool calls as (name, input) pairs; or an error; or the
    raw bytes of a stream (``frames``) as a broken upstream would send them, or the JSON reply
    to a stream request (``whole``)."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: tuple[int, str] | None = None  # (status, Bedrock exception name)
    frames: bytes | None = None
    whole: bool = False  # a stream request answered with the JSON reply (a broken upstream)

    def content(self, ids: list[str]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"text": self.text}] if self.text else []
        return out + [
            {"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, (n, a) in zip(ids, self.calls, strict=True)
        ]

    def reply(self, ids: list[str]) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": self.content(ids)}},
            "stopReason": "tool_use" if self.calls else "end_turn",
            "usage": {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120},
            "metrics": {"latencyMs": 42},
        }

    def events(self, ids: list[str]) -> list[bytes]:
        """The reply as Bedrock streams it, one frame per event."""
        out = [event("messageStart", {"role": "assistant"})]
        index = 0
        if self.text:
            out += [
                event("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": self.text[i : i + 8]}})
                for i in range(0, len(self.text), 8)
            ]
            out.append(event("contentBlockStop", {"contentBlockIndex": 0}))
            index = 1
        for at, (ident, (name, args)) in enumerate(zip(ids, self.calls, strict=True), start=index):
            text = json.dumps(args)
            out.append(
                event(
                    "contentBlockStart",
                    {"contentBlockIndex": at, "start": {"toolUse": {"toolUseId": ident, "name": name}}},
                )
            )
            half = len(text) // 2
            for piece in (text[:half], text[half:]):
                out.append(
                    event("contentBlockDelta", {"contentBlockIndex": at, "delta": {"toolUse": {"input": piece}}})
                )
            out.append(event("contentBlockStop", {"contentBlockIndex": at}))
        out.append(event("messageStop", {"stopReason": "tool_use" if self.calls else "end_turn"}))
        usage = {"inputTokens": 100, "outputTokens": 20, "totalTokens": 120}
        out.append(event("metadata", {"usage": usage, "metrics": {"latencyMs": 42}}))
        return out


def event(name: str, data: dict[str, Any]) -> bytes:
    return frame(name, json.dumps({**data, "p": "abcdefgh"}).encode())


def tools_closed(body: dict[str, Any]) -> bool:
    return "toolConfig" not in body


def results(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [b["toolResult"] for m in body.get("messages", []) for b in m.get("content", []) if "toolResult" in b]


def stubborn(
    name: str = "read_file", args: dict | None = None, final: str = "I could not finish: the file never changed."
) -> Callable[[dict], Said]:
    """A looping model: the same call every time; with tools closed, its final answer."""

    def respond(body: dict) -> Said:
        if tools_closed(body):
            return Said(text=final)
        return Said(calls=[(name, args or {"path": "a.txt"})])

    return respond


def healthy(steps: int = 2, name: str = "read_file") -> Callable[[dict], Said]:
    """A model that reads ``steps`` different files, then answers."""

    def respond(body: dict) -> Said:
        done = len(results(body))
        if done >= steps:
            return Said(text="All files summarized: a short, complete answer.")
        return Said(text="Reading." if done else None, calls=[(name, {"path": f"f{done}.txt"})])

    return respond


def refusal(body: dict[str, Any]) -> str | None:
    """Why Bedrock would refuse this Converse body (a ValidationException), or None."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must not be empty"
    tool_blocks = False
    previous_calls: list[str] = []
    for n, message in enumerate(messages):
        role = message.get("role")
        if role != ("user" if n % 2 == 0 else "assistant"):
            return f"A conversation must alternate between user and assistant roles (messages.{n})."
        answered = []
        for m, block in enumerate(message.get("content", [])):
            if "text" in block and not block["text"].strip():
                return f"The text field in the ContentBlock object at messages.{n}.content.{m} is blank."
            if "toolUse" in block or "toolResult" in block:
                tool_blocks = True
            if "toolResult" in block:
                answered.append(block["toolResult"]["toolUseId"])
        if role == "user" and sorted(answered) != sorted(previous_calls):
            return f"Expected toolResult blocks at messages.{n}.content for the ids {previous_calls}."
        previous_calls = [b["toolUse"]["toolUseId"] for b in message.get("content", []) if "toolUse" in b]
    if tool_blocks and "toolConfig" not in body:
        return "The toolConfig field must be defined when using toolUse and toolResult content blocks."
    return None


class ConverseUpstream:
    """``signed``: every request must carry a valid signature of the scripted credentials."""

    def __init__(self, responder: Callable[[dict], Said], signed: bool = True) -> None:
        self.responder = responder
        self.signed = signed
        self.requests: list[dict[str, Any]] = []
        self.sent: list[bytes] = []  # the exact bytes of each answer, for byte-for-byte checks
        self.app = Starlette(routes=[Route("/model/{call:path}", self._model, methods=["POST"])])

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    async def _model(self, request: Request) -> Response:
        raw = await request.body()
        record = {
            "raw": raw,
            "headers": dict(request.headers),
            "path": request.url.path,
            "raw_path": request.scope["raw_path"].decode(),
            "query": request.url.query,
        }
        self.requests.append(record)
        if self.signed and (
            wrong := sigv4_check.refusal(
                "POST", record["raw_path"], record["query"], request.headers.items(), raw, request.headers["host"]
            )
        ):
            return _error(403, *wrong)
        # As AWS routes: the model id is one segment of the raw path ("/" in an ARN sent as %2F).
        segments = record["raw_path"].split("/")
        model, method = unquote(segments[2]) if len(segments) == 4 else "", segments[-1]
        if method not in ("converse", "converse-stream"):
            return _error(404, "UnknownOperationException", "unknown operation")
        try:
            body = record["json"] = json.loads(raw)
        except ValueError:
            return _error(400, "SerializationException", "the body is not JSON")
        if model not in MODELS:
            return _error(400, "ValidationException", "The provided model identifier is invalid.")
        try:
            why = refusal(body)
        except (AttributeError, KeyError, TypeError):  # a block not of its shape
            why = "Malformed input request: a content block is not of its schema."
        if why is not None:
            return _error(400, "ValidationException", why)
        said = self.responder(body)
        if said.error is not None:
            return _error(said.error[0], said.error[1], "scripted")
        ids = [f"tooluse_{len(self.requests)}_{n}" for n in range(len(said.calls))]
        if method == "converse" or said.whole:
            content = json.dumps(said.reply(ids)).encode()
            self.sent.append(content)
            return Response(content, media_type="application/json")
        frames = said.frames if said.frames is not None else b"".join(said.events(ids))
        self.sent.append(frames)

        # Frames split across reads, as TCP does: 50-byte pieces, larger for a stream of many
        # megabytes (at most ~2,000 pieces, not one ASGI message per 50 bytes of 24 MiB).
        size = max(50, len(frames) // 2000)

        async def pieces():
            for at in range(0, len(frames), size):
                yield frames[at : at + size]

        return StreamingResponse(pieces(), media_type=CONTENT_TYPE)


def _error(status: int, name: str, message: str) -> Response:
    headers = {"x-amzn-ErrorType": f"{name}:http://internal.amazon.com/coral/com.amazon.bedrock/"}
    return Response(json.dumps({"message": message}).encode(), status, headers, media_type="application/json")
