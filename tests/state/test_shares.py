"""Entries kept per tenant: one tenant's volume evicts only its own (``gateway.state.shares``)."""

import pytest

from gateway.state.shares import FAIR_SHARE, TENANT_CAP, Heaviest, Shares, tenant_of


@pytest.mark.parametrize(
    ("key", "tenant"),
    [
        ("t:0123456789abcdef01234567:h:run-1", "t:0123456789abcdef01234567:"),
        ("t:0123456789abcdef01234567:own:response:resp_1", "t:0123456789abcdef01234567:"),
        ("c:abcdef:resp_1", "c:abcdef:"),
        ("c:-:resp_1", "c:-:"),  # the namespace of records of clients without a credential
        ("k:abc123/f:deadbeef", "k:abc123/"),  # LiteLLM's sessions
        ("responses:t:0123456789abcdef01234567:h:run-1", "t:0123456789abcdef01234567:"),  # a protocol's
        ("gemini:c:abcdef:f:deadbeef", "c:abcdef:"),
        ("h:run-1", ""),  # a session of a client without a credential
        ("h:t:0123456789abcdef01234567:x", ""),  # ...whatever id it names: never a tenant's
        ("responses:h:t:0123456789abcdef01234567:x", ""),
        ("f:deadbeef", ""),
        ("t:unterminated", ""),
        ("", ""),
    ],
)
def test_the_tenant_is_read_from_the_key(key, tenant):
    assert tenant_of(key) == tenant


def test_the_heaviest_tenant_follows_changing_weights():
    held = Heaviest()
    for tenant, delta in [("a", 3), ("b", 5), ("a", 4), ("b", -5), ("c", 1)]:
        held.add(tenant, delta)
    assert held.top() == "a" and held.weights == {"a": 7, "c": 1}
    for _ in range(1000):  # outdated entries do not pile up
        held.add("c", 1)
        held.add("c", -1)
    assert held.top() == "a" and len(held._heap) <= 2 * len(held.weights) + 64


def test_the_global_bound_evicts_from_the_tenant_holding_the_most():
    shares: Shares[int] = Shares(limit=10)
    shares.put("t:a:1", 1, 1)
    shares.put("t:a:2", 2, 1)
    for n in range(100):  # b floods
        shares.put(f"t:b:{n}", n, 1)
    assert shares.get("t:a:1") == 1 and shares.get("t:a:2") == 2
    assert shares.total == 10 and shares.held.weights == {"t:a:": 2, "t:b:": 8}
    assert [key for key, _ in shares.oldest("t:b:")] == [f"t:b:{n}" for n in range(92, 100)]  # b's newest
    assert shares.evicted == {FAIR_SHARE: 92}


def test_a_tenant_beyond_its_cap_loses_its_own_oldest_even_with_room_left():
    shares: Shares[str] = Shares(limit=100, tenant_limit=3)
    for n in range(5):
        shares.put(f"t:b:{n}", "x" * n, 1)
    shares.put("t:a:1", "mine", 1)
    assert [key for key, _ in shares.oldest("t:b:")] == ["t:b:2", "t:b:3", "t:b:4"]
    assert shares.get("t:a:1") == "mine" and shares.evicted == {TENANT_CAP: 2}


def test_weights_in_bytes_and_a_value_beyond_the_cap_is_not_kept():
    shares: Shares[bytes] = Shares(limit=100, tenant_limit=40)
    shares.put("t:a:big", b"x" * 41, 41)
    assert shares.get("t:a:big") is None and shares.total == 0
    shares.put("t:a:1", b"x" * 30, 30)
    shares.put("t:a:1", b"x" * 10, 10)  # replaced, not counted twice
    assert shares.total == 10 and len(shares) == 1


def test_used_entries_are_evicted_last_within_a_tenant():
    shares: Shares[int] = Shares(limit=3)
    for n in range(3):
        shares.put(f"t:a:{n}", n, 1)
    assert shares.get("t:a:0") == 0  # used again: t:a:1 is now the oldest
    shares.put("t:a:3", 3, 1)
    assert shares.get("t:a:1") is None and shares.get("t:a:0") == 0
