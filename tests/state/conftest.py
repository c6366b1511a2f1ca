import pytest
from support.redis_server import RedisServer, redis_binary


@pytest.fixture(scope="session", autouse=True)
def _redis_installed():
    try:
        redis_binary()
    except RuntimeError as exc:  # fail, never skip: CI installs it, so missing means broken CI
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def redis_server(tmp_path):
    server = RedisServer(tmp_path).start()
    yield server
    server.stop()
