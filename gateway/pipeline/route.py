"""The one handler every guarded protocol uses: ``Guarded(ADAPTER, gateway)``, a plain ASGI app
the front dispatches to by exact path (``server/front.py``)."""

from __future__ import annotations

import time
from typing import Any

from starlette.responses import Response

from gateway.context import Gateway, path_for_upstream
from gateway.pipeline import request as request_stage
from gateway.pipeline import stream, tenancy, terminate, unary
from gateway.pipeline.exchange import Exchange, new_request_id
from gateway.pipeline.request_log import Clock
from gateway.policy.actions import Action
from gateway.protocols.roles import Adapter
from gateway.state.session import client_namespace
from gateway.upstream.base import UpstreamRequest, event_stream, json_body
from gateway.upstream.errors import UpstreamError
from gateway.web.body import too_many_items
from gateway.web.refused import read_or_refuse, refused, upstream_failed
from gateway.web.responses import error_response


class Guarded:
    """The ASGI app of one guarded protocol."""

    __slots__ = ("adapter", "gateway", "unguarded")

    def __init__(self, adapter: Adapter, gateway: Gateway, unguarded: Any = None) -> None:
        self.adapter, self.gateway = adapter, gateway
        self.unguarded = unguarded  # the ASGI app of a request the adapter does not guard

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        adapter = self.adapter.at(scope)
        if adapter is None:
            await self.unguarded(scope, receive, send)
            return
        response = await run(adapter, self.gateway, scope, receive)
        await response(scope, receive, send)


async def run(adapter: Adapter, gateway: Gateway, scope: dict[str, Any], receive: Any) -> Response:
    started = time.perf_counter()
    body = await read_or_refuse(gateway, scope, receive, started, shape=adapter.authored.error_body)
    if isinstance(body, Response):
        return body
    payload, message, code, items_end = request_stage.parse(adapter, body, gateway.bodies)
    if payload is not None and (
        message := too_many_items(adapter.requests.items(payload), gateway.config.limits.max_messages)
    ):
        payload, code = None, "too_many_messages"
    if payload is None:
        answer = error_response(400, message or "", code=code, shape=adapter.authored.error_body)
        return refused(gateway, "POST", scope["path"], answer, started)
    headers = header_map(scope["headers"])
    ex = _exchange(gateway, adapter, scope, headers, payload, body, started)
    ex.items_end = items_end
    ex.namespace = client_namespace(headers)
    if (foreign := await tenancy.foreign(ex)) is not None:  # another tenant's id: never relayed
        return refused(gateway, "POST", scope["path"], foreign, started)
    await request_stage.judge(ex, headers)
    if ex.plan is not None and ex.plan.action == Action.TERMINATE:
        return await terminate.at_request(ex)
    ex.clock.took(started)
    sent = time.perf_counter()
    try:
        upstream = await ex.upstream.send(ex.outgoing)
    except UpstreamError as exc:
        return upstream_failed(gateway, exc, ex.path, shape=adapter.authored.error_body)
    finally:
        ex.clock.waited(sent)
    # The reply's own shape picks the path, not the request's: an upstream may answer a stream
    # request with one JSON body or a unary one with events, and either is judged all the same.
    # A stream request's reply that names neither shape (no content type, ``text/plain``) is
    # read as the events it asked for; the stream filter still ends one that opens as JSON.
    # Any success is read so (a 201 is a success to every SDK), not only a 200.
    if 200 <= upstream.status < 300 and _events(ex.stream, upstream.headers):
        return stream.respond(ex, upstream)
    return await unary.respond(ex, upstream)


def _events(asked: bool, headers: list[tuple[bytes, bytes]]) -> bool:
    return event_stream(headers) or (asked and not json_body(headers))


def header_map(raw: list[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers by name, the first of a repeated one (as Starlette's ``Headers.get``
    reads them): the guard looks several up per request, each then one dict lookup."""
    out: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1")
        if key not in out:
            out[key] = value.decode("latin-1")
    return out


def _exchange(
    gateway: Gateway,
    adapter: Adapter,
    scope: dict[str, Any],
    headers: dict[str, str],
    payload: dict[str, Any],
    body: bytes,
    started: float,
) -> Exchange:
    path = scope["path"]
    request_id = new_request_id(headers)
    spec = adapter.declared.upstream
    outgoing = UpstreamRequest(
        method="POST",
        path=path_for_upstream(scope, spec),
        query=gateway.forward_query(scope.get("query_string", b""), spec),
        headers=gateway.forward_headers(scope["headers"], identity=True, spec=spec),
        body=body,
        client_body=body,
    )
    return Exchange(
        gateway,
        adapter,
        request_id,
        path,
        payload,
        body,
        adapter.requests.stream(payload),
        gateway.upstream_for(adapter.name),
        outgoing,
        gateway.log.bind(request_id=request_id, path=path),
        Clock(started),
    )
