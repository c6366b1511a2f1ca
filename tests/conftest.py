import compileall
import os
import shutil
import sys
from pathlib import Path

import pytest
import structlog

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).parent))  # makes tests/support importable as `support`

from support.browser import chromium_path
from support.rewritten import rewrite_once
from support.servers import serve
from support.tls import share_default_tls_context
from support.upstream import ScriptedUpstream

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app

share_default_tls_context()


def _plain_tracebacks() -> None:
    """A gateway a test starts logs through structlog's defaults (only ``loopguard serve``
    configures logging), whose console renderer draws a logged exception with every local
    variable: seconds for one fail-open line under the parallel suite's load, long enough for a
    client to time out. Plain tracebacks, as the gateway's own console format writes them."""
    processors = structlog.get_config()["processors"]
    plain = structlog.dev.ConsoleRenderer(exception_formatter=structlog.dev.plain_traceback)
    structlog.configure(processors=[*processors[:-1], plain])


_plain_tracebacks()


@pytest.hookimpl(tryfirst=True)  # before xdist starts its workers
def pytest_sessionstart(session: pytest.Session) -> None:
    """The suite drives a real redis-server and a real chromium: without either, the run ends at
    once with the one line that says what to install (rather than hundreds of failures).

    The gateway's modules (and the test helpers) are compiled once here, and the test modules
    rewritten for pytest's asserts once (``support.rewritten``): an editable install leaves them
    uncompiled, and where the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``)
    each worker and each gateway process the suite starts would compile them all again."""
    if hasattr(session.config, "workerinput") or session.config.option.collectonly:
        return  # xdist workers: the controller has checked
    missing = [name for name, found in _SYSTEM.items() if not found()]
    if missing:
        raise pytest.UsageError(
            f"missing {' and '.join(missing)}: install {' '.join(missing)} first "
            f"(Debian/Ubuntu: apt-get install {' '.join(missing)}; .ci/run does)"
        )
    here = Path(__file__).parent
    for tree in (here.parent / "gateway", here / "support"):
        compileall.compile_dir(tree, quiet=1)
    rewrite_once(session.config, here)


def _has_chromium() -> bool:
    try:
        return bool(chromium_path())
    except RuntimeError:
        return False


_SYSTEM = {"redis-server": lambda: shutil.which("redis-server") is not None, "chromium": _has_chromium}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests that share a module- or package-scoped fixture (a LiteLLM proxy, a browser, servers
    kept for a module) run on one xdist worker (``--dist loadgroup``), so the fixture is set up
    once in a run rather than once on every worker that gets one of its tests."""
    for item in items:
        group = _shared_scope(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def _shared_scope(item: pytest.Item) -> str | None:
    """The narrowest module/class or package scope among the fixtures ``item`` uses: its module's
    node id, else the package fixture's directory; None when it uses no such fixture. Session
    fixtures are left out: every worker process needs its own anyway."""
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    scopes = {
        defs[-1].scope: defs[-1].baseid for defs in (fixtureinfo.name2fixturedefs if fixtureinfo else {}).values()
    }
    if "module" in scopes or "class" in scopes:
        return item.nodeid.split("::")[0]
    return scopes.get("package")


class _Answering:
    """The worker's one scripted-upstream server, answering as the current test's
    ``ScriptedUpstream``: a server started and stopped per test cost more than most tests."""

    def __init__(self) -> None:
        self.scripted: ScriptedUpstream | None = None

    async def __call__(self, scope, receive, send) -> None:
        assert self.scripted is not None, "a request to the scripted upstream between tests"
        await self.scripted.app(scope, receive, send)


@pytest.fixture(scope="session")
def _upstream_server():
    answering = _Answering()
    with serve(answering, lifespan="off") as url:
        yield answering, url


@pytest.fixture
def upstream(_upstream_server):
    answering, url = _upstream_server
    scripted = answering.scripted = ScriptedUpstream()
    scripted.url = url
    yield scripted
    answering.scripted = None


@pytest.fixture
def make_gateway(upstream):
    """Start a gateway (real uvicorn) in front of the scripted upstream; returns its base URL."""
    started = []

    def start(**overrides) -> str:
        raw = {"upstream": {"base_url": upstream.url + "/v1"}}
        for key, value in overrides.items():
            raw[key] = {**raw.get(key, {}), **value} if isinstance(value, dict) else value
        ctx = serve(build_app(Config.model_validate(raw)), **SERVER_OPTIONS)  # as `loopguard serve` runs it
        url = ctx.__enter__()
        started.append(ctx)
        return url

    yield start
    for ctx in reversed(started):
        ctx.__exit__(None, None, None)


@pytest.fixture
def gateway(make_gateway):
    return make_gateway()
