"""The console's hardening, through a real gateway: security headers on every answer, a bounded
sign-in body (413, never a 500), cross-site sign-in and sign-out refused, sign-out revoking the
cookie server-side (both backends), keys only in headers, the Secure flag from trusted proxies
only, UTF-8 session headers shown as sent."""

from __future__ import annotations

import httpx
import pytest
from support import rawhttp
from support.guarded import guarded
from support.looping import stubborn
from support.policies import ladder_policy
from support.servers import serve

from gateway.config import Config
from gateway.console.hardening import HEADERS, MAX_FORM
from gateway.policy.holder import PolicyHolder
from gateway.server.app import SERVER_OPTIONS, build_app
from gateway.serving import proxy_options

from .runs import loop_as, shown, state

AUTH = {"auth": {"keys": ["client-key"], "metrics_keys": ["operator-key"]}}
OPERATOR = {"authorization": "Bearer operator-key"}


def test_every_console_answer_carries_the_security_headers(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g, httpx.Client(base_url=g.url) as http:
        answers = [
            http.get("/ui", headers=OPERATOR),
            http.get("/ui/api/feed", headers=OPERATOR),
            http.get("/ui/api/status", headers=OPERATOR),
            http.get("/ui/run?session=s&run=1", headers=OPERATOR),  # 404
            http.get("/ui/api/feed"),  # 401
            http.get("/ui", headers={"accept": "text/html"}),  # the sign-in form
            http.get("/ui/login"),
            http.post("/ui/login", data={"key": "wrong"}),
            http.get("/ui/static/console.js"),
        ]
        for answer in answers:
            for name, value in HEADERS.items():
                assert answer.headers.get(name) == value, (answer.request.url, name)
        assert "frame-ancestors 'none'" in HEADERS["content-security-policy"]


def test_a_sign_in_body_beyond_the_limit_is_refused_with_413(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g, httpx.Client(base_url=g.url) as http:
        declared = http.post("/ui/login", content=b"key=" + b"x" * (MAX_FORM * 50))
        assert declared.status_code == 413

        def chunks():  # no content-length: read as it comes, refused past the limit
            for _ in range(2000):
                yield b"x" * 1024

        streamed = http.post("/ui/login", content=chunks())
        assert streamed.status_code == 413
        # 200 MB announced, a few bytes sent: refused on the header, the rest never awaited.
        with rawhttp.connect(g.url) as sock:
            head = "POST /ui/login HTTP/1.1\r\nHost: gateway\r\nContent-Length: 209715200\r\n\r\nkey="
            sock.sendall(head.encode())
            assert rawhttp.read_response(sock).status == 413
        signed = http.post("/ui/login", data={"key": "operator-key", "next": "/ui"})
        assert signed.status_code == 303  # the gateway is fine


@pytest.mark.parametrize(
    "named",
    [{"origin": "https://evil.example"}, {"origin": "null"}, {"referer": "https://evil.example/page"}],
)
def test_cross_site_sign_in_and_sign_out_are_refused(tmp_path, named):
    with guarded(stubborn(), tmp_path, **AUTH) as g, httpx.Client(base_url=g.url) as http:
        refused = http.post("/ui/login", data={"key": "operator-key", "next": "/ui"}, headers=named)
        assert refused.status_code == 403 and "set-cookie" not in refused.headers
        same = http.post("/ui/login", data={"key": "operator-key", "next": "/ui"}, headers={"origin": g.url})
        assert same.status_code == 303
        assert http.post("/ui/logout", headers=named).status_code == 403
        assert http.get("/ui/api/feed").status_code == 200  # still signed in


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_sign_out_revokes_the_cookie_on_the_server(tmp_path, backend):
    with state(backend, tmp_path) as store, guarded(stubborn(), tmp_path, state=store, **AUTH) as g:
        with httpx.Client(base_url=g.url) as http:
            assert http.post("/ui/login", data={"key": "operator-key", "next": "/ui"}).status_code == 303
            old = http.cookies["loopguard_console"]
            assert http.get("/ui/api/feed").status_code == 200
            assert http.post("/ui/logout").status_code == 303
        with httpx.Client(base_url=g.url, cookies={"loopguard_console": old}) as replay:
            assert replay.get("/ui/api/feed").status_code == 401  # the copied cookie no longer works
            assert replay.get("/ui/api/status").status_code == 401


def test_operator_keys_are_taken_from_headers_never_the_query_string(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g, httpx.Client(base_url=g.url) as http:
        for path in ("/ui", "/ui/api/feed", "/ui/api/status"):  # /metrics, /readyz: tests/server/test_auth.py
            for query in ("key", "api_key", "x-api-key"):
                assert http.get(path, params={query: "operator-key"}).status_code == 401, (path, query)
            assert http.get(path, headers=OPERATOR).status_code == 200, path


@pytest.mark.parametrize(("trusted", "secure"), [(("127.0.0.1",), True), (("10.9.8.7",), False), ((), False)])
def test_the_secure_flag_follows_x_forwarded_proto_from_trusted_proxies_only(tmp_path, trusted, secure):
    policy = tmp_path / "policy.yaml"
    policy.write_text(ladder_policy())
    config = Config.model_validate({"server": {"forwarded_allow_ips": list(trusted)}, **AUTH})
    app = build_app(config, policies=PolicyHolder(policy))
    with serve(app, **SERVER_OPTIONS, **proxy_options(config.server.forwarded_allow_ips)) as url:
        signed = httpx.post(
            url + "/ui/login",
            data={"key": "operator-key", "next": "/ui"},
            headers={"x-forwarded-proto": "https"},
        )
        assert signed.status_code == 303
        assert ("; secure" in signed.headers["set-cookie"].lower()) is secure


def test_a_utf8_session_header_is_shown_as_sent(tmp_path):
    with guarded(stubborn(), tmp_path, **AUTH) as g:
        loop_as(g.url, "client-key", "café-ü-日本".encode())
        found = shown(g.url, "operator-key", "café-ü-日本")
        assert any(e["session"].endswith("café-ü-日本") for e in found["events"])
        assert "Ã" not in str(found)
        session = found["events"][0]["session"]
        page = httpx.get(g.url + "/ui/run", params={"session": session, "run": 1}, headers=OPERATOR)
        assert page.status_code == 200 and "café-ü-日本" in page.text
