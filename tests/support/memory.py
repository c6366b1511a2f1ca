"""Memory of a child process and the traffic that used to grow it without bound."""

from __future__ import annotations

import json

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

ARG_BYTES = 256 * 1024
_COMPLETION = orjson.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
)


def rss_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def forgetful_upstream() -> Starlette:
    """Answers every chat request with a fixed completion and keeps nothing (a recording
    upstream would itself hold every 256 KB body)."""

    async def chat(request: Request) -> Response:
        await request.body()
        return Response(_COMPLETION, media_type="application/json")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def big_write_request(i: int) -> bytes:
    """A new conversation whose one executed call wrote a distinct 256 KB file."""
    content = (f"{i:08d}" * (ARG_BYTES // 8))[:ARG_BYTES]
    args = json.dumps({"path": f"out/{i}.txt", "content": content})
    return orjson.dumps(
        {
            "model": "m",
            "messages": [
                {"role": "user", "content": f"write file {i}"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": f"call_{i}", "type": "function", "function": {"name": "write_file", "arguments": args}}
                    ],
                },
                {"role": "tool", "tool_call_id": f"call_{i}", "content": "written"},
            ],
        }
    )


def send_big_writes(url: str, start: int, count: int) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        for i in range(start, start + count):
            response = client.post(
                "/v1/chat/completions", content=big_write_request(i), headers={"content-type": "application/json"}
            )
            assert response.status_code == 200, response.text
