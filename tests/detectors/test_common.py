"""The helpers detectors share."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gateway.detectors.common import has_chars


@pytest.mark.parametrize(
    ("text", "count", "expected"),
    [
        ("", 0, True),
        ("", 1, False),
        ("   ", 1, False),
        ("  ab  ", 2, True),
        ("  ab  ", 3, False),
        ("\n\tDone.\n", 5, True),
        ("x" * 20, 16, True),
        (" " * 200 + "abc" + " " * 200, 3, True),
        (" " * 200 + "abc" + " " * 200, 4, False),
        ("\u2003word\u2003", 4, True),  # any Unicode blank
    ],
)
def test_has_chars_is_the_stripped_length(text, count, expected):
    assert has_chars(text, count) is expected


@given(st.text(alphabet=st.sampled_from(" \t\n\u00a0ab"), max_size=300), st.integers(0, 40))
def test_has_chars_agrees_with_strip(text, count):
    assert has_chars(text, count) == (len(text.strip()) >= count)
