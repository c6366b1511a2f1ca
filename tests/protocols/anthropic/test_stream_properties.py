"""Whatever the blocks, verdicts and chunk boundaries: the client's message is the upstream's
with exactly the refused call and the calls after it taken out, and the SDK accepts it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ..filters import anthropic_filter
from .streams import PING, accumulate, end, start, text, thinking, tool

pytestmark = pytest.mark.usefixtures("fast_paths")


BLOCK = st.sampled_from(["text", "tool", "thinking", "ping"])


def _upstream(kinds: list[str]) -> tuple[bytes, list[tuple[str, str]]]:
    """The stream and its blocks as (kind, id-or-text) in order."""
    parts, blocks, index = [start()], [], 0
    for n, kind in enumerate(kinds):
        if kind == "ping":
            parts.append(PING)
            continue
        if kind == "text":
            parts += text(index, f"t{n} ", "more")
            blocks.append(("text", f"t{n} more"))
        elif kind == "tool":
            parts += tool(index, f"toolu_{n}", "read_file", '{"path": ', f'"f{n}"}}')
            blocks.append(("tool_use", f"toolu_{n}"))
        else:
            parts += thinking(index, f"th{n}")
            blocks.append(("thinking", f"th{n}"))
        index += 1
    return b"".join(parts + end()), blocks


@settings(max_examples=150, deadline=None)
@given(kinds=st.lists(BLOCK, max_size=7), refused=st.integers(0, 8), cut=st.integers(0, 97))
def test_random_streams(kinds, refused, cut):
    upstream, blocks = _upstream(kinds)
    filt = anthropic_filter(lambda call, position: position != refused, keepalive_s=None)
    out = b""
    # cut 0: one event per chunk, as the API flushes; otherwise chunks of ``cut`` bytes.
    pieces = (
        [p + b"\n\n" for p in upstream.split(b"\n\n") if p]
        if cut == 0
        else [upstream[i : i + cut] for i in range(0, len(upstream), cut)]
    )
    for piece in pieces:
        out += b"".join(filt.feed(piece))
    out += b"".join(filt.end_upstream())
    if filt.needs_decision:
        out += b"".join(filt.terminate("Stopped."))
    out += b"".join(filt.final())

    expected, calls = [], 0
    for kind, value in blocks:
        if kind == "tool_use":
            calls += 1
            if calls - 1 >= refused:
                continue
        expected.append((kind, value))
    if any(k == "tool_use" for k, _ in blocks) and not any(k == "tool_use" for k, _ in expected):
        expected.append(("text", "Stopped."))  # every call refused: the run is ended
    message = accumulate(out)
    got = [
        (b.type, b.id if b.type == "tool_use" else b.text if b.type == "text" else b.thinking) for b in message.content
    ]
    assert got == expected
    if refused >= calls:
        assert out == upstream  # nothing refused: byte for byte
