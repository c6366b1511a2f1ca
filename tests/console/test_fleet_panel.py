"""The console's fleet panel in a real browser (headless Chromium) and its API: tools down now,
per tenant, with the sessions affected, first and last seen and one masked error; a tenant's key
sees its own tenant's only. And /metrics stays bounded under a flood of failing tool names."""

from __future__ import annotations

import json

import httpx
import openai
from prometheus_client.parser import text_string_to_metric_families
from support.browser import SHOWN_S
from support.guarded import guarded
from support.upstream import Reply

TENANTS = [{"key": "key-acme", "tenant": "acme"}, {"key": "key-globex", "tenant": "globex"}]
AUTH = {"keys": TENANTS, "metrics_keys": ["operator-key"]}
SECRET = "token=abcd1234efgh5678"
CRM = "mcp__crm__lookup_customer"


def answer(request: dict) -> Reply:
    return Reply(content="noted")


def failed(url: str, key: str, session: str, tool: str, result: str, args: str = '{"id": 7}') -> None:
    """One request of a session whose last call failed (as an agent sends it after the call)."""
    client = openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=20)
    call = {"id": f"call_{session}", "type": "function", "function": {"name": tool, "arguments": args}}
    client.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": f"help with {session}"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call["id"], "content": result},
        ],
        extra_headers={"x-loopguard-session": session},
    )


def test_the_panel_shows_each_tenants_tools_down_and_masks_the_error(tmp_path, page):
    config = {"auth": AUTH, "ui": {"tenant_view": True}, "fleet": {"sessions": 2}}
    with guarded(answer, tmp_path, **config) as g:
        for n in range(2):
            failed(g.url, "key-acme", f"a{n}", CRM, f"MCP error -32603: crm backend unavailable ({SECRET})")
            url = json.dumps({"url": "https://weather.example.com/v1/now"})
            failed(g.url, "key-globex", f"g{n}", "fetch_weather", "Error: 503 Service Unavailable", url)
        failed(g.url, "key-acme", "a9", "other_tool", "Error: once only")  # one session: not down

        with httpx.Client(base_url=g.url) as http:
            acme = http.get("/ui/api/fleet", headers={"authorization": "Bearer key-acme"}).json()
            assert [(t["tenant"], t["tool"], t["endpoint"], t["sessions"]) for t in acme["tools"]] == [
                ("acme", CRM, "crm", 2)
            ]
            assert SECRET not in acme["tools"][0]["error"] and "crm backend unavailable" in acme["tools"][0]["error"]
            every = http.get("/ui/api/fleet", headers={"authorization": "Bearer operator-key"}).json()
            assert sorted((t["tenant"], t["endpoint"]) for t in every["tools"]) == [
                ("acme", "crm"),
                ("globex", "weather.example.com"),
            ]

        page.goto(g.url + "/ui/login")
        page.fill("#key", "operator-key")
        page.click("button[type=submit]")
        page.wait_for_selector("body[data-tools-down='2']", timeout=SHOWN_S)
        rows = page.eval_on_selector_all(
            "#tools-down tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.innerText))"
        )
        by_tenant = {row[0]: row for row in rows}
        assert by_tenant["acme"][1:4] == [CRM, "crm", "2"]
        assert by_tenant["globex"][1:4] == ["fetch_weather", "weather.example.com", "2"]
        assert all(row[5] and row[6] for row in rows)  # first and last seen
        assert "crm backend unavailable" in by_tenant["acme"][7] and SECRET not in by_tenant["acme"][7]
        assert page.is_hidden("#fleet-empty")
        page.screenshot(path=str(tmp_path / "fleet-panel.png"), full_page=True)

        # A success of the tool anywhere in the tenant lifts it: the panel empties for acme.
        client = openai.OpenAI(base_url=g.url + "/v1", api_key="key-acme", max_retries=0, timeout=20)
        call = {"id": "call_ok", "type": "function", "function": {"name": CRM, "arguments": "{}"}}
        client.chat.completions.create(
            model="m",
            messages=[
                {"role": "user", "content": "ok run"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_ok", "content": "customer 7: Ada"},
            ],
        )
        page.wait_for_selector("body[data-tools-down='1']", timeout=SHOWN_S)


def test_metrics_stay_bounded_under_a_flood_of_failing_tool_names(tmp_path):
    config = {"auth": {**AUTH, "metrics_keys": ["operator-key"]}, "fleet": {"sessions": 2, "metrics_tools": 3}}
    with guarded(answer, tmp_path, **config) as g:
        for n in range(2):
            failed(g.url, "key-acme", f"a{n}", CRM, "MCP error -32603: crm backend unavailable")
        for n in range(150):  # a tool name per call, each failing once
            failed(g.url, "key-acme", f"f{n}", f"api_{n}", "Error: 500 Internal Server Error")
        text = httpx.get(g.url + "/metrics", headers={"authorization": "Bearer operator-key"}).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert [s.value for s in families["loopguard_tools_down"].samples] == [1]
    failures = {
        s.labels["tool"]: s.value for s in families["loopguard_tool_failures"].samples if s.name.endswith("_total")
    }
    assert failures == {CRM: 1, "other": 151}  # the down tool's own series (from the call that took it down)
