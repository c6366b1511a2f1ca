"""The per-text memo stays within its entry and byte bounds whatever texts pass through it."""

from gateway.trace.memo import Memo


def test_big_distinct_values_are_bounded_by_bytes_not_only_by_count():
    memo: Memo[str, tuple[str, str]] = Memo(4096, max_bytes=1_000_000)
    for i in range(200):  # 200 x 100 KB: 20 MB offered, a count bound of 4,096 would keep it all
        memo.put(f"k{i}", ("x" * 100_000, "h"))
        assert memo.bytes <= 1_000_000 + 100_200
    assert len(memo) <= 10
    assert memo.get("k199") is not None  # the newest stays


def test_a_value_larger_than_half_the_budget_is_not_kept():
    memo: Memo[str, str] = Memo(10, max_bytes=1000)
    memo.put("small", "v")
    memo.put("huge", "x" * 600)
    assert memo.get("huge") is None and memo.get("small") == "v"


def test_entries_in_use_survive_rotation_and_the_count_bound_holds():
    memo: Memo[int, str] = Memo(3)
    memo.put(0, "zero")
    for i in range(1, 20):
        memo.put(i, str(i))
        assert memo.get(0) == "zero"  # used on every round: never evicted
        assert len(memo) <= 6
