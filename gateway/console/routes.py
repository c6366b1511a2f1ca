"""The console's HTTP surface under ``/ui``: the feed page (static, polling ``/ui/api/feed``), one
run's page (rendered here), the status (``/ui/api/status``: policy in effect, state backend),
and the operator's sign-in. Every route but the sign-in needs an operator key (``access``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from urllib.parse import parse_qs

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from gateway.console import run_page, view
from gateway.console.access import COOKIE, SESSION_S, OperatorAccess
from gateway.console.assets import ASSETS, page
from gateway.console.status import status
from gateway.context import Gateway
from gateway.protocols.errors import error_body

Handler = Callable[[Request], Awaitable[Response]]

# Bearer, not Basic (which is accepted all the same): a Basic challenge makes a browser ask in a
# dialog of its own, for the page and for each of its requests, instead of showing the form.
_CHALLENGE = {"www-authenticate": 'Bearer realm="loopguard console"'}
FEED_ROWS = 200  # interventions the feed page shows; totals count every kept event
MAX_FORM = 4096


class Console:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.access = OperatorAccess(gateway.config.auth)
        self.keep = gateway.config.ui.max_events

    def routes(self) -> list[Route]:
        guarded = [
            ("/ui", self.index),
            ("/ui/run", self.run),
            ("/ui/api/feed", self.feed),
            ("/ui/api/status", self.status),
        ]
        return [Route(path, self._operator(handler), methods=["GET"]) for path, handler in guarded] + [
            Route("/ui/static/{name}", self.asset, methods=["GET"]),  # the same for everyone: the sign-in page's style
            Route("/ui/login", self.login, methods=["GET", "POST"]),
            Route("/ui/logout", self.logout, methods=["POST"]),
        ]

    def _operator(self, handler: Handler) -> Handler:
        async def checked(request: Request) -> Response:
            if self.access.allows(request):
                return await handler(request)
            if request.url.path.startswith("/ui/api/") or "text/html" not in request.headers.get("accept", ""):
                return JSONResponse(
                    error_body("An operator key is required (auth.metrics_keys).", code="invalid_api_key"),
                    status_code=401,
                    headers=_CHALLENGE,
                )
            return _login_page(request.url.path + (f"?{request.url.query}" if request.url.query else ""), "")

        return checked

    async def index(self, request: Request) -> Response:
        return HTMLResponse(ASSETS["index.html"][0])

    async def asset(self, request: Request) -> Response:
        found = ASSETS.get(request.path_params["name"])
        if found is None:
            return Response(status_code=404)
        return Response(found[0], media_type=found[1], headers={"cache-control": "no-cache"})

    async def feed(self, request: Request) -> Response:
        since = request.query_params.get("since")
        if since:  # a page polling: one entry read tells whether anything is new
            latest = await self.gateway.store.recent_events(1)
            if latest and latest[0].id == since:
                return JSONResponse({"unchanged": True, "newest": since})
        logged = await self.gateway.store.recent_events(self.keep)
        newest = logged[0].id if logged else ""
        items = view.parse(logged)
        return Response(
            orjson.dumps(
                {
                    "newest": newest,
                    "events": view.feed(items, FEED_ROWS),
                    "totals": view.totals(items),
                    "kept": len(items),
                    "keep": self.keep,
                }
            ),
            media_type="application/json",
        )

    async def status(self, request: Request) -> Response:
        return JSONResponse(await status(self.gateway))

    async def run(self, request: Request) -> Response:
        session = request.query_params.get("session", "")
        try:
            number = int(request.query_params.get("run", "0"))
        except ValueError:
            return HTMLResponse(page("LoopGuard run", "<p>run must be a number</p>"), status_code=400)
        items = view.parse(await self.gateway.store.recent_events(self.keep))
        mine = view.run_items(items, session, number)
        if not mine:
            return HTMLResponse(
                page(
                    "LoopGuard run",
                    "<p>No kept events for this run (the console keeps the "
                    f'newest {self.keep}).</p><p><a href="/ui">back</a></p>',
                ),
                status_code=404,
            )
        saved = view.savings_of(items)
        savings = [saved[i.id] for i in mine if i.id in saved]
        details = {}
        for item in mine:
            raw = await self.gateway.store.event_detail(item.detail) if item.detail else None
            try:
                found = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:
                found = None  # unreadable: the run is shown without this timeline
            if isinstance(found, dict):
                details[item.id] = found
        return HTMLResponse(page(f"LoopGuard run {session}", run_page.render(session, number, mine, details, savings)))

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return _login_page(request.query_params.get("next", "/ui"), "", status=200)
        body = (await request.body())[:MAX_FORM]
        form = parse_qs(body.decode("utf-8", "replace"))
        target = _local(form.get("next", ["/ui"])[0])
        cookie = self.access.sign_in(form.get("key", [""])[0])
        if cookie is None:
            return _login_page(target, "That key is not an operator key.")
        out = RedirectResponse(target, status_code=303)
        out.set_cookie(
            COOKIE,
            cookie,
            max_age=SESSION_S,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )
        return out

    async def logout(self, request: Request) -> Response:
        out = RedirectResponse("/ui/login", status_code=303)
        out.delete_cookie(COOKIE, path="/ui")
        return out


def _local(target: str) -> str:
    """Only a console path: a sign-in link must not send the browser elsewhere."""
    return target if target.startswith("/ui") and "//" not in target and "\\" not in target else "/ui"


def _login_page(target: str, error: str, status: int = 401) -> HTMLResponse:
    problem = f'<p class="error" id="login-error">{escape(error)}</p>' if error else ""
    body = (
        f'<form class="login" method="post" action="/ui/login"><h1>LoopGuard console</h1>'
        f'<p class="meta">Sign in with an operator key (<code>auth.metrics_keys</code>).</p>{problem}'
        f'<input type="password" name="key" id="key" placeholder="operator key" autofocus required>'
        f'<input type="hidden" name="next" value="{escape(_local(target))}">'
        f'<button type="submit">Sign in</button></form>'
    )
    return HTMLResponse(page("LoopGuard console: sign in", body), status_code=status, headers=_CHALLENGE)
