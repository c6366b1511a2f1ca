"""Who may open the console: operator keys only (auth.metrics_keys), by header, basic auth or the
login form's HttpOnly cookie; 401 without; off with ui.enabled."""

from __future__ import annotations

import httpx
from support.guarded import guarded
from support.looping import stubborn

AUTH = {"auth": {"keys": ["client-key"], "metrics_keys": ["operator-key"]}}


def test_every_console_route_needs_an_operator_key(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g:
        with httpx.Client(base_url=g.url) as http:
            for path in ("/ui", "/ui/api/feed", "/ui/api/status", "/ui/run?session=s&run=1"):
                assert http.get(path).status_code == 401, path
                assert http.get(path, headers={"authorization": "Bearer client-key"}).status_code == 401, path
                assert http.get(path, headers={"authorization": "Bearer operator-key"}).status_code in (200, 404), path
            assert http.get("/ui/api/feed", auth=("", "operator-key")).status_code == 200  # curl -u :KEY
            assert http.get("/ui/api/feed", auth=("operator-key", "")).status_code == 200
            assert http.get("/ui/api/feed", auth=("x", "wrong")).status_code == 401
            assert http.get("/ui/static/console.css").status_code == 200  # the sign-in form's style
            # A browser is shown the sign-in form, still with 401.
            page = http.get("/ui", headers={"accept": "text/html"})
            assert page.status_code == 401 and 'name="key"' in page.text


def test_the_login_form_sets_an_httponly_cookie_that_opens_the_console(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g:
        with httpx.Client(base_url=g.url) as http:
            wrong = http.post("/ui/login", data={"key": "client-key", "next": "/ui"})
            assert wrong.status_code == 401 and "does not open the console" in wrong.text
            signed = http.post("/ui/login", data={"key": "operator-key", "next": "https://elsewhere.example/"})
            assert signed.status_code == 303 and signed.headers["location"] == "/ui"  # never off-site
            cookie = signed.headers["set-cookie"]  # the form's POST named no origin: not cross-site
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie
            assert "operator-key" not in cookie
            assert http.get("/ui/api/feed").status_code == 200  # the cookie jar sends it
            http.post("/ui/logout")
            assert http.get("/ui/api/feed").status_code == 401
            http.cookies.set("loopguard_console", "1.forged", path="/ui")
            assert http.get("/ui/api/feed").status_code == 401


def test_client_keys_open_the_console_when_no_operator_keys_are_set(tmp_path):
    with guarded(stubborn(), tmp_path, auth={"keys": ["client-key"]}) as g:
        with httpx.Client(base_url=g.url) as http:
            assert http.get("/ui/api/feed").status_code == 401
            assert http.get("/ui/api/feed", headers={"x-api-key": "client-key"}).status_code == 200


def test_ui_enabled_false_switches_the_console_off(tmp_path):
    with guarded(stubborn(), tmp_path, ui={"enabled": False}) as g:
        with httpx.Client(base_url=g.url) as http:
            assert http.get("/ui").status_code == 404
            assert http.get("/ui/api/feed").status_code == 404
        assert g.gateway.audit.find("console") is None
