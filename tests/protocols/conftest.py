import pytest

from . import filters


@pytest.fixture(params=[True, False], ids=["fast", "general"])
def fast_paths(request, monkeypatch):
    """Run a stream test with the fast paths and with the general reader alone."""
    monkeypatch.setattr(filters, "FAST", request.param)
    return request.param
