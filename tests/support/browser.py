"""Headless Chromium for the console's tests: Debian's ``chromium`` package, driven by Playwright.

Playwright's own browser downloads are never used (``playwright install`` is not run anywhere):
the tests point it at the system binary, which CI installs (.ci/run).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

SHOWN_S = 10_000  # ms a page may take to show a run; the feed polls every 300 ms
CHROMIUM = os.environ.get("LOOPGUARD_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    found = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if found is None:
        raise RuntimeError(f"no chromium at {CHROMIUM}: install Debian's chromium package (.ci/run does)")
    return found


@contextmanager
def chromium() -> Iterator[object]:
    """A launched headless browser (``playwright.sync_api.Browser``)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=ARGS)
        try:
            yield browser
        finally:
            browser.close()


def loop_run(url: str, session: str, agent: str | None = None):
    """A stubborn agent run through the gateway at ``url`` (the test's model loops on read_file)."""
    import openai

    from support.agent import Agent

    client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0, timeout=30)
    headers = {"x-loopguard-session": session, **({"x-loopguard-agent": agent} if agent else {})}
    runner = Agent(client, tools={"read_file": lambda a: "contents of a.txt"}, headers=headers)
    runner.run("summarize a.txt")
    return runner
