"""An upstream that takes its time and notices when the gateway stops waiting for it."""

from __future__ import annotations

import asyncio

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


class PatientUpstream:
    """Every request waits up to ``delay`` seconds before answering; a request whose caller
    hangs up first is counted in ``abandoned``."""

    def __init__(self, delay: float = 10.0) -> None:
        self.delay = delay
        self.started = 0
        self.abandoned = 0
        self.answered = 0
        self.app = Starlette(routes=[Route("/v1/{rest:path}", self._handle, methods=["GET", "POST"])])

    async def _handle(self, request: Request) -> JSONResponse:
        await request.body()
        self.started += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.delay
        while loop.time() < deadline:
            if await request.is_disconnected():
                self.abandoned += 1
                return JSONResponse({}, status_code=499)
            await asyncio.sleep(0.02)
        self.answered += 1
        return JSONResponse(
            {
                "id": "x",
                "object": "chat.completion",
                "model": "m",
                "created": 0,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "late"}, "finish_reason": "stop"}],
            }
        )
