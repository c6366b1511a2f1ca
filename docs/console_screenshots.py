"""Make the documentation's screenshots of the operator console (docs/console.md), and measure
how soon a stop shows.

    python docs/console_screenshots.py            # writes docs/console-feed.png, docs/console-run.png

Everything runs on 127.0.0.1 in this process: a scripted model, the gateway (a small fleet
policy), and three agents: one re-reads a file until it is stopped, one repeats a web search
until warned and then answers, one reruns failing tests. The console is open in headless Chromium
(Debian's ``chromium``, driven by Playwright) while they run; the script prints how long after
each stop the feed showed it.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

DOCS = Path(__file__).resolve().parent
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
POLICY = """\
version: 1
name: fleet
agents:
  - id: research-bot
    match: {header: research-bot}
    detectors:
      no_progress: {warn_at: 2}
"""
TOOLS = [
    {"type": "function", "function": {"name": n, "description": n, "parameters": {"type": "object"}}}
    for n in ("read_file", "web_search", "run_tests")
]
AGENTS = {  # session -> (agent header, task, tool, arguments, result)
    "coder-run-7f3a": (
        None,
        "Summarize notes.txt",
        "read_file",
        {"path": "notes.txt"},
        "Q3 planning: ship the billing revamp by Sept 30; hire two SREs.",
    ),
    "research-5d21": (
        "research-bot",
        "Find the 2025 revenue of Acme",
        "web_search",
        {"q": "acme revenue 2025"},
        "No results for 'acme revenue 2025'.",
    ),
    "ci-fix-0b9e": (
        None,
        "Make the tests pass",
        "run_tests",
        {"path": "tests/test_billing.py"},
        "Error: AssertionError in test_invoice_total: expected 120, got 100 (exit code 1)",
    ),
}


def model_app() -> Starlette:
    """Loops on its task's tool; answers once tools are closed, or (the research bot) once warned."""

    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        messages = body["messages"]
        task = next(m["content"] for m in messages if m["role"] == "user")
        session = next(s for s, a in AGENTS.items() if a[1] == task)
        _, _, tool, args, _ = AGENTS[session]
        warned = any(str(m.get("content", "")).startswith("[LoopGuard]") for m in messages if m["role"] == "system")
        if body.get("tool_choice") == "none" or (warned and tool == "web_search"):
            message = {
                "role": "assistant",
                "content": f"I could not finish: {tool} kept returning the same "
                "thing. Here is what I have so far; the missing piece needs a person.",
            }
            reason = "stop"
        else:
            n = len(messages)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{n}", "type": "function", "function": {"name": tool, "arguments": json.dumps(args)}}
                ],
            }
            reason = "tool_calls"
        return JSONResponse(
            {
                "id": "chatcmpl-shot",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": reason}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def run_agent(url: str, session: str) -> tuple[str, float]:
    """Until the model answers; the last response's action and when it arrived."""
    agent, task, _tool, _, result = AGENTS[session]
    headers = {"x-loopguard-session": session, **({"x-loopguard-agent": agent} if agent else {})}
    messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
    with httpx.Client(base_url=url + "/v1", timeout=60, headers=headers) as client:
        for _ in range(20):
            r = client.post("/chat/completions", json={"model": "gpt-4o-mini", "messages": messages, "tools": TOOLS})
            message = r.json()["choices"][0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                return r.headers.get("x-loopguard-action", "pass"), time.monotonic()
            for call in message["tool_calls"]:
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return "pass", time.monotonic()


def main() -> int:
    from playwright.sync_api import sync_playwright

    from gateway.config import Config
    from gateway.loopback import serve
    from gateway.policy.holder import PolicyHolder
    from gateway.server.app import SERVER_OPTIONS, build_app

    policy = Path(tempfile.mkdtemp()) / "fleet.yaml"
    policy.write_text(POLICY)
    with serve(model_app()) as model_url, sync_playwright() as playwright:
        app = build_app(
            Config.model_validate({"upstream": {"base_url": model_url + "/v1"}}), policies=PolicyHolder(policy)
        )
        with serve(app, **SERVER_OPTIONS) as url:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1440, "height": 1100})
            page.goto(url + "/ui")
            page.wait_for_selector("#status-line:has-text('policy fleet')")
            for session in AGENTS:
                action, done = run_agent(url, session)
                selector = f"#feed tbody tr[data-session$='{session}'][data-action={action}]"
                if action != "pass":
                    page.wait_for_selector(selector, timeout=10_000)
                    shown = time.monotonic() - done
                    saved = ""
                    if action == "terminate":
                        page.wait_for_selector(selector + " td:has-text('tok')", timeout=60_000)
                        saved = f", its savings {time.monotonic() - done:.2f} s after"
                    print(
                        f"{session}: {action}; shown in the feed {shown:.2f} s after the response{saved}",
                        file=sys.stderr,
                    )
            # The savings arrive once litellm's price table is loaded (seconds, in a thread).
            page.wait_for_function("document.getElementById('t-cost').textContent !== '$0'", timeout=60_000)
            page.wait_for_timeout(5500)  # the status panel's next poll
            page.screenshot(path=str(DOCS / "console-feed.png"), full_page=True)
            page.locator("#feed tbody tr[data-action=terminate] td.session a").first.click()
            page.wait_for_selector("table.timeline")
            page.screenshot(path=str(DOCS / "console-run.png"), full_page=True)
            browser.close()
    print(f"wrote {DOCS / 'console-feed.png'} and {DOCS / 'console-run.png'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
