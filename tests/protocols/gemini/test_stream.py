"""The Gemini stream filter holding a round's words (a conversation at warn level): a kept round
goes out as the upstream's own chunks, in order; a refused round's words never go out."""

from __future__ import annotations

import json

from gateway.protocols.base import StreamOptions
from gateway.protocols.gemini.stream import GeminiStreamFilter

HOLD = StreamOptions(keepalive_s=0.0, hold_text=True)  # no keepalive is ever written, whatever the interval


def chunk(*parts: dict, last: bool = False) -> bytes:
    candidate = {"content": {"role": "model", "parts": list(parts)}, "index": 0}
    if last:
        candidate["finishReason"] = "STOP"
    return b"data: " + json.dumps({"candidates": [candidate]}).encode() + b"\r\n\r\n"


WORDS = [chunk({"text": "Let me "}), chunk({"text": "read a.txt."})]
CALL = chunk({"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}, last=True)


def judge_refusing(*names: str):
    return lambda call, position: call.name not in names


def test_words_wait_for_the_first_call_and_then_go_out_as_they_came():
    filt = GeminiStreamFilter(judge_refusing(), HOLD)
    out = [piece for raw in WORDS for piece in filt.feed(raw)]
    assert out == []  # held: the round's fate is not known yet
    out += filt.feed(CALL) + filt.end_upstream() + filt.final()
    assert out == [*WORDS, CALL]


def test_a_round_without_calls_goes_out_when_it_ends():
    filt = GeminiStreamFilter(judge_refusing(), HOLD)
    closing = chunk({"text": "Done."}, last=True)
    out = [piece for raw in [*WORDS, closing] for piece in filt.feed(raw)]
    assert out == [*WORDS, closing]


def test_a_refused_rounds_words_are_never_shown():
    filt = GeminiStreamFilter(judge_refusing("read_file"), HOLD)
    out = [piece for raw in [*WORDS, CALL] for piece in filt.feed(raw)] + filt.end_upstream()
    assert out == [] and filt.needs_decision
    assert filt.round.rejected is not None and filt.round.rejected.name == "read_file"
    out = filt.terminate("Stopped.") + filt.final()
    assert b"Let me" not in b"".join(out) and b"Stopped." in b"".join(out)


def test_a_stream_broken_off_shows_the_words_so_far():
    filt = GeminiStreamFilter(judge_refusing(), HOLD)
    for raw in WORDS:
        filt.feed(raw)
    assert filt.cut(b"") == WORDS


def test_a_chunk_without_a_candidate_keeps_its_place_and_outlives_a_refused_round():
    usage = b'data: {"usageMetadata": {"promptTokenCount": 1}}\r\n\r\n'
    kept = GeminiStreamFilter(judge_refusing(), HOLD)
    out = [piece for raw in [WORDS[0], usage, WORDS[1], CALL] for piece in kept.feed(raw)]
    assert out == [WORDS[0], usage, WORDS[1], CALL]
    refused = GeminiStreamFilter(judge_refusing("read_file"), HOLD)
    out = [piece for raw in [WORDS[0], usage, WORDS[1], CALL] for piece in refused.feed(raw)]
    assert out == [usage]
