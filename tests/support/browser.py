"""Headless Chromium for the console's tests: Debian's ``chromium`` package, driven by Playwright.

Playwright's own browser downloads are never used (``playwright install`` is not run anywhere):
the tests point it at the system binary, which CI installs (.ci/run).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

CHROMIUM = os.environ.get("LOOPGUARD_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


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
