"""``state.mode``: a Sentinel set or a cluster named by config alone, and a config that cannot
reach one refused at load, naming the key."""

from pathlib import Path

import pytest

from gateway.config import ConfigError, load_config
from gateway.state import build_store
from gateway.state.redis import RedisStore
from gateway.state.redis_topology import ClusterTopology, SentinelTopology, Target, Topology, first_seed_url, seeds

BAD = {
    "sentinel mode without sentinels": ("mode: sentinel\n  service: lg", "state.sentinels"),
    "sentinel mode without service": ("mode: sentinel\n  sentinels: ['h:26379']", "state.service"),
    "a sentinel that is no host:port": ("mode: sentinel\n  service: lg\n  sentinels: ['h']", "state.sentinels"),
    "an unknown mode": ("mode: sharded", "state.mode"),
}


def load(tmp_path: Path, state: str):
    path = tmp_path / "loopguard.yaml"
    path.write_text(f"upstream: {{base_url: 'http://127.0.0.1:9/v1'}}\nstate:\n  backend: redis\n  {state}\n")
    return load_config(path, env={})


@pytest.mark.parametrize("case", BAD)
def test_a_mode_without_what_it_needs_is_a_config_error_naming_the_key(tmp_path, case):
    state, key = BAD[case]
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, state)
    assert caught.value.path == key


MODES = {
    "single": ("url: redis://127.0.0.1:6379/0", Topology),
    "cluster": ("mode: cluster\n  url: redis://10.0.0.1:7000,10.0.0.2:7001", ClusterTopology),
    "sentinel": (
        "mode: sentinel\n  sentinels: ['10.0.0.1:26379', '10.0.0.2:26379']\n  service: lg",
        SentinelTopology,
    ),
}


@pytest.mark.parametrize("mode", MODES)
async def test_each_mode_builds_its_topology_without_connecting(tmp_path, mode):
    state, kind = MODES[mode]
    store = build_store(load(tmp_path, state).state)
    assert isinstance(store, RedisStore) and type(store.topology) is kind
    await store.aclose()


def test_a_cluster_url_names_its_seed_nodes():
    assert seeds("redis://:pw@10.0.0.1:7000,node-b,[::1]:7002/0") == [
        ("10.0.0.1", 7000),
        ("node-b", 6379),
        ("::1", 7002),
    ]


# Every spelling the docs allow for ``state.url``: each keeps what redis-py's URL parser reads
# from it (credentials, database, TLS), a Sentinel URL without a host included.
SPELLINGS = {
    "redis:///0": ("redis:///0", {"db": 0}),
    "redis://:pw@/0": ("redis://:pw@/0", {"password": "pw", "db": 0}),
    "rediss://:pw@/1": ("rediss://:pw@/1", {"password": "pw", "db": 1}),
    "redis://u:pw@h1:7000,h2:7001/2": ("redis://u:pw@h1:7000/2", {"username": "u", "host": "h1", "port": 7000}),
    "redis://[::1]:7000,[::2]/0?x=1": ("redis://[::1]:7000/0?x=1", {"host": "::1", "port": 7000}),
    "unix:///run/redis.sock?db=3": ("unix:///run/redis.sock?db=3", {"path": "/run/redis.sock", "db": 3}),
}


@pytest.mark.parametrize("url", SPELLINGS)
def test_the_first_seed_url_keeps_the_spelling_redis_py_reads(url):
    expected, options = SPELLINGS[url]
    assert first_seed_url(url) == expected
    read = Topology(Target(mode="single", url=url))._options.connection_kwargs
    assert {key: read.get(key) for key in options} == options


@pytest.mark.parametrize("url", ["redis:///0", "redis://:pw@/0", "rediss://:pw@/0", "rediss://u:pw@/0"])
async def test_a_sentinel_url_without_a_host_builds_its_client(url):
    topology = SentinelTopology(Target(mode="sentinel", url=url, sentinels=(("127.0.0.1", 26379),), service="lg"))
    client = topology.client()
    pool = client.connection_pool
    assert pool.connection_kwargs.get("password") == ("pw" if "pw" in url else None)
    assert ("SSL" in pool.connection_class.__name__) == url.startswith("rediss")
    await client.aclose()
    await topology.aclose()
