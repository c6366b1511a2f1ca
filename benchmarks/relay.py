"""The floor for a Python hop: a bare starlette + httpx relay, no parsing, no policy, no logs.

    python benchmarks/relay.py --port 9001 --upstream http://127.0.0.1:9000
"""

import argparse

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.responses import StreamingResponse
from starlette.routing import Route

DROP = {"host", "content-length", "connection", "keep-alive", "transfer-encoding"}
client: httpx.AsyncClient  # one pooled keep-alive client, as any sane proxy has


async def relay(request):
    body = await request.body()
    headers = [(k, v) for k, v in request.headers.raw if k.decode() not in DROP]
    url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    upstream = await client.send(client.build_request(request.method, url, headers=headers, content=body), stream=True)
    out = {k: v for k, v in upstream.headers.items() if k not in DROP}
    return StreamingResponse(upstream.aiter_raw(), upstream.status_code, out, background=BackgroundTask(upstream.aclose))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args()
    limits = httpx.Limits(max_connections=512, max_keepalive_connections=512)
    client = httpx.AsyncClient(base_url=args.upstream, limits=limits, timeout=600, trust_env=False)
    app = Starlette(routes=[Route("/{path:path}", relay, methods=["GET", "POST"])])
    uvicorn.run(app, host="127.0.0.1", port=args.port, loop="uvloop", http="httptools",
                log_level="warning", access_log=False)
