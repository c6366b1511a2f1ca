"""A scripted Gemini API upstream: the "model" answers each request from a responder.

It speaks ``POST /v1beta/models/{model}:generateContent`` and ``:streamGenerateContent?alt=sse``
(chunks as the API sends them: text in pieces, each ``functionCall`` whole, ``finishReason`` and
usage on the last; without ``alt=sse`` the same chunks as one JSON array), ``/v1/models/...`` alike, and ``/v1beta/models/{model}:countTokens``; it
records every request it receives and the exact bytes of every answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route


@dataclass
class Said:
    """One scripted answer: text, then function calls as (name, args) pairs."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    status: int = 200

    def parts(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = [{"text": self.text}] if self.text else []
        return out + [{"functionCall": {"name": n, "args": a}} for n, a in self.calls]

    def reply(self, model: str, parts: list[dict[str, Any]], last: bool = True) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
        if last:
            candidate["finishReason"] = "STOP"
        return {
            "candidates": [candidate],
            "usageMetadata": {
                "promptTokenCount": 100,
                "candidatesTokenCount": 20 if last else 1,
                "totalTokenCount": 120 if last else 101,
            },
            "modelVersion": model,
            "responseId": "resp-up",
        }

    def chunks(self, model: str) -> list[dict[str, Any]]:
        """The reply streamed: text in pieces of 8 characters, then one chunk per call."""
        pieces: list[list[dict[str, Any]]] = []
        if self.text:
            pieces += [[{"text": self.text[i : i + 8]}] for i in range(0, len(self.text), 8)]
        pieces += [[{"functionCall": {"name": n, "args": a}}] for n, a in self.calls]
        pieces = pieces or [[{"text": ""}]]
        return [self.reply(model, p, i == len(pieces) - 1) for i, p in enumerate(pieces)]

    def events(self, model: str) -> list[bytes]:
        return [_event(chunk) for chunk in self.chunks(model)]


def _event(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\r\n\r\n"


def tools_closed(body: dict[str, Any]) -> bool:
    return body.get("toolConfig", {}).get("functionCallingConfig", {}).get("mode") == "NONE"


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
        done = sum(1 for c in body.get("contents", []) for p in c.get("parts", []) if "functionResponse" in p)
        if done >= steps:
            return Said(text="All files summarized: a short, complete answer.")
        return Said(text="Reading." if done else None, calls=[(name, {"path": f"f{done}.txt"})])

    return respond


class GeminiUpstream:
    """``answers``: every generate request answered in this shape (``object``: one JSON reply,
    ``array``: the chunks as a JSON array, ``sse``: events, ``mislabelled``: one JSON reply
    sent as ``text/event-stream``), whatever its method and ``alt`` ask for, as an upstream
    that reads them otherwise would; None: as Google answers."""

    def __init__(self, responder: Callable[[dict], Said], answers: str | None = None) -> None:
        self.responder = responder
        self.answers = answers
        self.requests: list[dict[str, Any]] = []
        self.sent: list[bytes] = []  # the exact bytes of each answer, for byte-for-byte checks
        routes = []
        for version in ("v1beta", "v1", "v1alpha"):
            for models in ("models", "tunedModels"):
                routes.append(Route(f"/{version}/{models}/{{call:path}}", self._models, methods=["POST", "GET"]))
        self.app = Starlette(routes=routes)

    @property
    def last(self) -> dict[str, Any]:
        return self.requests[-1]

    async def _models(self, request: Request) -> Response:
        raw = await request.body()
        body = orjson.loads(raw) if raw else {}
        self.requests.append(
            {
                "raw": raw,
                "json": body,
                "headers": dict(request.headers),
                "path": request.url.path,
                "query": request.url.query,
            }
        )
        model, _, method = request.path_params["call"].partition(":")
        if method == "countTokens":
            return Response(b'{"totalTokens": 7}', media_type="application/json")
        said = self.responder(body)
        if said.status != 200:
            error = {"error": {"code": said.status, "message": "scripted", "status": "UNAVAILABLE"}}
            return Response(orjson.dumps(error), said.status, media_type="application/json")
        shape = self.answers or (
            "object"
            if method != "streamGenerateContent"
            else "sse"
            if request.query_params.get("alt") == "sse"
            else "array"
        )
        if shape == "array":
            content = json.dumps(said.chunks(model), indent=2).encode()  # Google's JSON array
            self.sent.append(content)
            return Response(content, media_type="application/json")
        if shape == "sse":
            events = said.events(model)
            self.sent.append(b"".join(events))

            async def pieces():
                for event in events:
                    yield event

            return StreamingResponse(pieces(), media_type="text/event-stream")
        content = json.dumps(said.reply(model, said.parts())).encode()
        self.sent.append(content)
        return Response(content, media_type="text/event-stream" if shape == "mislabelled" else "application/json")
