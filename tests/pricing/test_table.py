"""The price table file: read once per process while it is unchanged, read again once rewritten,
and an unreadable or malformed file prices nothing (savings count tokens only)."""

import os

import orjson
import pytest

from gateway.pricing.table import Price, read_table


def _write(path, models):
    path.write_bytes(orjson.dumps(models))


def test_an_unchanged_file_is_parsed_once_and_shared_read_only(tmp_path):
    table = tmp_path / "prices.json"
    _write(table, {"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6, "litellm_provider": "x"}})
    first, second = read_table(table), read_table(table)
    assert first is second
    assert first["m"] == Price(1e-6, 2e-6, "x", "table")
    with pytest.raises(TypeError):
        first["n"] = first["m"]  # type: ignore[index]


def test_a_rewritten_file_is_read_again(tmp_path):
    table = tmp_path / "prices.json"
    _write(table, {"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}})
    before = read_table(table)
    _write(table, {"m": {"input_cost_per_token": 3e-6, "output_cost_per_token": 4e-6}, "n": {}})
    stat = table.stat()
    os.utime(table, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # a coarse clock: a later time
    after = read_table(table)
    assert before["m"].input == 1e-6 and after["m"].input == 3e-6


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[1, 2]", b'"a string"', b'{"m": [1], "n": {"input_cost_per_token": "1"}}'],
    ids=["malformed", "a list", "a string", "entries that are no prices"],
)
def test_a_file_that_is_no_table_prices_nothing(tmp_path, content):
    table = tmp_path / "prices.json"
    table.write_bytes(content)
    assert dict(read_table(table)) == {}


def test_a_missing_file_prices_nothing_and_is_read_once_it_appears(tmp_path):
    table = tmp_path / "prices.json"
    assert dict(read_table(table)) == {}
    _write(table, {"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}})
    assert set(read_table(table)) == {"m"}
