# Imported before any run is stopped: the first stop loads litellm's price table in a thread,
# which imports httpx; the openai SDK looks httpx up in sys.modules and must never find it half
# imported by that thread.
import httpx
import pytest
from support.browser import chromium, chromium_path


# Module scope, never session: Playwright's sync API keeps an event loop running in this thread
# while it is open, and asyncio tests of other modules must not find one running.
@pytest.fixture(scope="module")
def browser():
    try:
        chromium_path()
    except RuntimeError as exc:  # fail, never skip: CI installs it, so missing means broken CI
        pytest.fail(str(exc), pytrace=False)
    with chromium() as launched:
        yield launched


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    yield context.new_page()
    context.close()
