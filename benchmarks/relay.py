"""The floor for a Python hop: a bare starlette relay, no parsing, no policy, no logs, over one
pooled keep-alive client, as any sane proxy has; either httpx or aiohttp.

    python benchmarks/relay.py --port 9001 --upstream http://127.0.0.1:9000 [--client aiohttp]
"""

import argparse

import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.routing import Route

DROP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding"}


def httpx_relay(upstream: str):
    import httpx

    limits = httpx.Limits(max_connections=512, max_keepalive_connections=512)
    client = httpx.AsyncClient(base_url=upstream, limits=limits, timeout=600, trust_env=False)

    async def relay(request):
        body = await request.body()
        headers = [(k, v) for k, v in request.headers.raw if k.decode() not in DROP]
        url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        response = await client.send(
            client.build_request(request.method, url, headers=headers, content=body), stream=True
        )
        out = {k: v for k, v in response.headers.items() if k not in DROP}
        return StreamingResponse(
            response.aiter_raw(), response.status_code, out, background=BackgroundTask(response.aclose)
        )

    return relay


def aiohttp_relay(upstream: str):
    import aiohttp

    session = None

    async def relay(request):
        nonlocal session
        if session is None:  # aiohttp wants the running loop
            session = aiohttp.ClientSession(upstream, connector=aiohttp.TCPConnector(limit=512), auto_decompress=False)
        body = await request.body()
        headers = [(k.decode(), v.decode()) for k, v in request.headers.raw if k.decode() not in DROP]
        url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        response = await session.request(request.method, url, headers=headers, data=body)
        out = {k: v for k, v in response.headers.items() if k.lower() not in DROP}
        return StreamingResponse(
            response.content.iter_any(), response.status, out, background=BackgroundTask(response.release)
        )

    return relay


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--client", choices=["httpx", "aiohttp"], default="httpx")
    args = parser.parse_args()
    relay = (aiohttp_relay if args.client == "aiohttp" else httpx_relay)(args.upstream)
    app = Starlette(routes=[Route("/{path:path}", relay, methods=["GET", "POST"])])
    uvicorn.run(
        app, host="127.0.0.1", port=args.port, loop="uvloop", http="httptools", log_level="warning", access_log=False
    )
