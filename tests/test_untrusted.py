"""The rule for text the gateway did not write: escaped, capped, bounded, hashed."""

from __future__ import annotations

import orjson

from gateway import untrusted


def test_lone_surrogates_are_escaped_and_long_text_capped():
    assert untrusted.text("ok") == "ok"
    assert untrusted.text("a\ud800b") == "a\\ud800b"
    capped = untrusted.text("x" * 5000)
    assert capped.startswith("x" * untrusted.MAX_TEXT) and capped.endswith("[3976 more]")


def test_dumps_never_raises_and_repairs_only_what_needs_it():
    assert untrusted.dumps({"a": 1}) == orjson.dumps({"a": 1})
    assert orjson.loads(untrusted.dumps({"k\ud800": ["v\udfff"]})) == {"k\\ud800": ["v\\udfff"]}
    big = orjson.loads(untrusted.dumps({"big": "y" * 200_000}))
    assert len(big["big"]) < 2000
    assert orjson.loads(untrusted.dumps({"obj": object()}))["obj"].startswith("<object")


def test_keys_stay_readable_unless_unsafe_or_long():
    assert untrusted.key("resp_1") == "resp_1"
    assert untrusted.key("resp_\ud800").startswith("#") and untrusted.key("r" * 300).startswith("#")
    assert untrusted.key("resp_\ud800") != untrusted.key("resp_\udc00")


def test_label_values_come_from_a_bounded_set():
    label = untrusted.BoundedLabel(limit=2)
    assert [label("a"), label("b"), label("c"), label("a")] == ["a", "b", "other", "a"]
    assert label("x" * 500) == "other" and label(None) == "unknown"
    assert untrusted.BoundedLabel()("m\ud800") == "other"
