"""The console's HTTP surface under ``/ui``: the feed page (static, polling ``/ui/api/feed``), one
run's page (rendered here), the status (``/ui/api/status``: policy in effect, state backend),
and the sign-in. Every route but the sign-in needs a key that opens the console (``access``);
a tenant's key (``ui.tenant_view``) sees its own runs only, everywhere.

Every answer carries ``hardening.HEADERS`` (no caching, a strict CSP, no framing, no sniffing).
The sign-in and sign-out refuse cross-site POSTs and read at most ``MAX_FORM`` bytes of body."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from html import escape
from typing import Any
from urllib.parse import urlencode

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from gateway.console import hardening, labels, run_page
from gateway.console.access import COOKIE, SESSION_S, ConsoleAccess, Viewer
from gateway.console.assets import ASSETS, page
from gateway.console.fleet import tools_down
from gateway.console.status import status
from gateway.console.window import Window
from gateway.context import Gateway
from gateway.protocols.errors import error_body

Handler = Callable[[Request], Awaitable[Response]]
ViewHandler = Callable[[Request, Viewer], Awaitable[Response]]

# Bearer, not Basic (which is accepted all the same): a Basic challenge makes a browser ask in a
# dialog of its own, for the page and for each of its requests, instead of showing the form.
_CHALLENGE = {"www-authenticate": 'Bearer realm="loopguard console"'}
FEED_ROWS = 200  # interventions the feed page shows; totals count every kept event
MAX_FORM = hardening.MAX_FORM


class Console:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        ui = gateway.config.ui
        self.access = ConsoleAccess(gateway.config.auth, ui, gateway.store)
        self.keep = ui.max_events
        self.window = Window(gateway.store, self.keep, self.access.tenancy, per_namespace=ui.tenant_view)

    def routes(self) -> list[Route]:
        guarded: list[tuple[str, ViewHandler]] = [
            ("/ui", self.index),
            ("/ui/run", self.run),
            ("/ui/api/feed", self.feed),
            ("/ui/api/status", self.status),
            ("/ui/api/fleet", self.fleet),
            ("/ui/api/labels", self.labelled),
        ]
        open_: list[tuple[str, Handler, list[str]]] = [
            ("/ui/static/{name}", self.asset, ["GET"]),  # the same for everyone: the sign-in page's style
            ("/ui/login", self.login, ["GET", "POST"]),
            ("/ui/logout", self.logout, ["POST"]),
        ]
        posted = [Route("/ui/label", hardening.headed(self._viewer(self.label)), methods=["POST"])]
        return (
            [Route(path, hardening.headed(self._viewer(h)), methods=["GET"]) for path, h in guarded]
            + [Route(path, hardening.headed(h), methods=methods) for path, h, methods in open_]
            + posted
        )

    def _viewer(self, handler: ViewHandler) -> Handler:
        async def checked(request: Request) -> Response:
            viewer = await self.access.viewer(request)
            if viewer is not None:
                return await handler(request, viewer)
            if request.url.path.startswith("/ui/api/") or "text/html" not in request.headers.get("accept", ""):
                return JSONResponse(
                    error_body(self._required(), code="invalid_api_key"), status_code=401, headers=_CHALLENGE
                )
            return self._login_page(request.url.path + (f"?{request.url.query}" if request.url.query else ""), "")

        return checked

    def _required(self) -> str:
        if self.access.closed:
            return (
                "The console is operator-only and tenants are configured: it opens with an operator key "
                "(auth.metrics_keys), or each tenant's own runs with ui.tenant_view."
            )
        return "An operator key is required (auth.metrics_keys)."

    async def index(self, request: Request, viewer: Viewer) -> Response:
        return HTMLResponse(ASSETS["index.html"][0])

    async def asset(self, request: Request) -> Response:
        found = ASSETS.get(request.path_params["name"])
        if found is None:
            return Response(status_code=404)
        return Response(found[0], media_type=found[1])

    async def feed(self, request: Request, viewer: Viewer) -> Response:
        """Reads only what is new since this process's last read (``Window``) and answers only
        what changed since the page's ``since``: the newer interventions, the earlier ones priced
        since, and the totals (kept up to date as events arrive). A page without ``since``, or
        whose ``since`` is no longer kept (or was another replica's), gets the whole feed."""
        await self.window.refresh()
        ledger = self.window.ledger(viewer.space)
        since = request.query_params.get("since", "")
        if since and since == ledger.newest:
            return JSONResponse({"unchanged": True, "newest": since})
        changed = ledger.since(since, FEED_ROWS) if since else None
        body: dict[str, Any] = {
            "newest": ledger.newest,
            "totals": ledger.totals(),
            "kept": len(ledger.items),
            "keep": self.keep,
            "backend": self.gateway.config.state.backend,
            "tenant": viewer.tenant,
            "scope": "operator" if viewer.space is None else "tenant",
        }
        if changed is None:
            body["events"] = ledger.feed(FEED_ROWS)
        else:
            body["events"], body["priced"], body["since"] = *changed, since
        return Response(orjson.dumps(body), media_type="application/json")

    async def status(self, request: Request, viewer: Viewer) -> Response:
        found = await status(self.gateway)
        return JSONResponse(found if viewer.space is None else hardening.tenant_status(found, viewer.tenant))

    async def fleet(self, request: Request, viewer: Viewer) -> Response:
        """Tools down now (``console/fleet.py``): the viewer's tenant's, or every tenant's."""
        return JSONResponse(await tools_down(self.gateway.fleet, viewer.space, self.access.tenancy))

    async def run(self, request: Request, viewer: Viewer) -> Response:
        session = request.query_params.get("session", "")
        try:
            number = int(request.query_params.get("run", "0"))
        except ValueError:
            return HTMLResponse(page("LoopGuard run", "<p>run must be a number</p>"), status_code=400)
        await self.window.refresh()
        ledger = self.window.ledger(viewer.space)
        mine = ledger.run(session, number)
        if not mine:
            return HTMLResponse(
                page(
                    "LoopGuard run",
                    "<p>No kept events for this run (the console keeps the "
                    f'newest {self.keep}).</p><p><a href="/ui">back</a></p>',
                ),
                status_code=404,
            )
        savings = [ledger.saved[i.id].data for i in mine if i.id in ledger.saved]
        details = {}
        for item in mine:
            raw = await self.gateway.store.event_detail(item.detail) if item.detail else None
            try:
                found = orjson.loads(raw) if raw else None
            except orjson.JSONDecodeError:
                found = None  # unreadable: the run is shown without this timeline
            if isinstance(found, dict):
                details[item.id] = found
        labelling = ""
        if viewer.space is None:  # operators label runs
            labelling = labels.form(
                session, number, (await labels.kept(self.gateway.store)).get(labels.key(session, number))
            )
        body = run_page.render(session, number, mine, details, savings, labelling)
        return HTMLResponse(page(f"LoopGuard run {session}", body))

    async def label(self, request: Request, viewer: Viewer) -> Response:
        """An operator's label for a run (the run page's form), then back to the run's page."""
        if viewer.space is not None:
            return JSONResponse(error_body("Only an operator labels runs.", code="forbidden"), status_code=403)
        refused = hardening.cross_site(request)
        if refused is not None:
            return refused
        fields = await hardening.form(request)
        if not isinstance(fields, dict):
            return fields
        read = labels.read_form(fields)
        if isinstance(read, str):
            return JSONResponse(error_body(read, code="invalid_label"), status_code=400)
        session, number, label, loop_at = read
        await self.window.refresh()
        mine = self.window.ledger(None).run(session, number)
        agent = next((i.data.get("agent") for i in mine if i.data.get("agent")), None)
        await labels.mark(self.gateway.store, session, number, label, loop_at, agent=agent)
        return RedirectResponse(f"/ui/run?{urlencode({'session': session, 'run': number})}", status_code=303)

    async def labelled(self, request: Request, viewer: Viewer) -> Response:
        """The operators' labels in the rows ``loopguard replay --labels`` reads."""
        if viewer.space is not None:
            return JSONResponse(error_body("Only an operator reads the labels.", code="forbidden"), status_code=403)
        kept = await labels.kept(self.gateway.store)
        return JSONResponse({"labels": labels.export_rows(list(kept.values()))})

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self._login_page(request.query_params.get("next", "/ui"), "", status=200)
        refused = hardening.cross_site(request)
        if refused is not None:
            return refused
        form = await hardening.form(request)
        if not isinstance(form, dict):
            return form
        target = _local(form.get("next", ["/ui"])[0])
        cookie = self.access.sign_in(form.get("key", [""])[0])
        if cookie is None:
            return self._login_page(target, "That key does not open the console.")
        out = RedirectResponse(target, status_code=303)
        out.set_cookie(
            COOKIE,
            cookie,
            max_age=SESSION_S,
            path="/ui",
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",  # behind a TLS proxy: server.forwarded_allow_ips
        )
        return out

    async def logout(self, request: Request) -> Response:
        refused = hardening.cross_site(request)
        if refused is not None:
            return refused
        await self.access.sign_out(request.cookies.get(COOKIE, ""))
        out = RedirectResponse("/ui/login", status_code=303)
        out.delete_cookie(COOKIE, path="/ui")
        return out

    def _login_page(self, target: str, error: str, status: int = 401) -> HTMLResponse:
        problem = f'<p class="error" id="login-error">{escape(error)}</p>' if error else ""
        closed = f'<p class="note">{escape(self._required())}</p>' if self.access.closed else ""
        body = (
            f'<form class="login" method="post" action="/ui/login"><h1>LoopGuard console</h1>'
            f'<p class="meta">Sign in with an operator key (<code>auth.metrics_keys</code>).</p>{closed}{problem}'
            f'<input type="password" name="key" id="key" placeholder="operator key" autofocus required>'
            f'<input type="hidden" name="next" value="{escape(_local(target))}">'
            f'<button type="submit">Sign in</button></form>'
        )
        return HTMLResponse(page("LoopGuard console: sign in", body), status_code=status, headers=_CHALLENGE)


def _local(target: str) -> str:
    """Only a console path: a sign-in link must not send the browser elsewhere."""
    return target if target.startswith("/ui") and "//" not in target and "\\" not in target else "/ui"
