"""The console per tenant: with tenants in ``auth.keys`` a client key opens nothing unless
``ui.tenant_view``, which shows each tenant its own runs only (feed, totals, run pages, status);
the feed names each run's tenant. Tried as tenant B, through a real gateway, on both backends."""

from __future__ import annotations

import httpx
import pytest
from support.guarded import guarded
from support.looping import stubborn

from .runs import feed, loop_as, shown, state

TENANTS = [{"key": "key-a", "tenant": "Zürich team"}, {"key": "key-b", "tenant": "beta"}, "key-plain"]
PAGES = ("/ui", "/ui/api/feed", "/ui/api/status", "/ui/run?session=s&run=1")


def test_no_client_key_opens_the_console_once_tenants_are_configured(tmp_path):
    with guarded(stubborn(), tmp_path, auth={"keys": TENANTS}) as g, httpx.Client(base_url=g.url) as http:
        loop_as(g.url, "key-a", "a-run")
        for key in ("key-a", "key-b", "key-plain"):
            for path in PAGES:
                answer = http.get(path, headers={"authorization": f"Bearer {key}"})
                assert answer.status_code == 401, (key, path)
                assert "auth.metrics_keys" in answer.text and "a-run" not in answer.text
            signed = http.post("/ui/login", data={"key": key, "next": "/ui"})
            assert signed.status_code == 401 and "set-cookie" not in signed.headers
        page = http.get("/ui", headers={"accept": "text/html"})
        assert page.status_code == 401 and "ui.tenant_view" in page.text  # the sign-in page says why


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_with_tenant_view_each_tenant_sees_only_its_own_runs(tmp_path, backend):
    auth = {"keys": TENANTS, "metrics_keys": ["operator-key"]}
    with (
        state(backend, tmp_path) as store,
        guarded(stubborn(), tmp_path, auth=auth, ui={"tenant_view": True}, state=store) as g,
        httpx.Client(base_url=g.url) as http,
    ):
        assert loop_as(g.url, "key-a", "a-run")[-1] == "terminate"
        assert loop_as(g.url, "key-b", "b-run")[-1] == "terminate"
        everything = shown(g.url, "operator-key", "a-run", "b-run")
        named = {e["session"].rsplit(":", 1)[-1]: e["tenant"] for e in everything["events"]}
        assert named == {"a-run": "Zürich team", "b-run": "beta"}  # the feed names each run's tenant
        assert everything["totals"]["runs"]["terminated"] == 2

        mine = shown(g.url, "key-b", "b-run")
        assert {e["tenant"] for e in mine["events"]} == {"beta"} and mine["tenant"] == "beta"
        assert all(e["session"].endswith("b-run") for e in mine["events"])
        assert mine["totals"]["runs"]["terminated"] == 1 and mine["scope"] == "tenant"
        assert "a-run" not in str(mine) and "Zürich" not in str(mine)
        assert feed(g.url, "key-plain")["events"] == []  # a key without a tenant: its own runs, none

        a_session = next(e["session"] for e in everything["events"] if e["session"].endswith("a-run"))
        b_session = next(e["session"] for e in everything["events"] if e["session"].endswith("b-run"))
        as_b = {"authorization": "Bearer key-b"}
        assert http.get("/ui/run", params={"session": a_session, "run": 1}, headers=as_b).status_code == 404
        own = http.get("/ui/run", params={"session": b_session, "run": 1}, headers=as_b)
        assert own.status_code == 200 and "b-run" in own.text
        status = http.get("/ui/api/status", headers=as_b).json()
        assert status["policy"]["overrides"] == [] and status["policy"]["file"] == "-"

        # The same through the sign-in form's cookie.
        assert http.post("/ui/login", data={"key": "key-b", "next": "/ui"}).status_code == 303
        by_cookie = http.get("/ui/api/feed").json()
        assert by_cookie["events"] and all(e["tenant"] == "beta" for e in by_cookie["events"])
