import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).parent))  # makes tests/support importable as `support`

from support.servers import serve
from support.upstream import ScriptedUpstream

from gateway.config import Config
from gateway.server.app import SERVER_OPTIONS, build_app


@pytest.fixture
def upstream():
    scripted = ScriptedUpstream()
    with serve(scripted.app) as url:
        scripted.url = url
        yield scripted


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
