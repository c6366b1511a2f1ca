"""``loopguard labels export``: the labels operators set on the console's run pages, written in the
format ``loopguard replay --labels`` reads. They live in the gateway's state store (its memory, or
Redis), so they are read from the gateway itself: ``GET /ui/api/labels`` with an operator key."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import IO

import httpx

from gateway.replay.labels import LabelError, write_labels

TIMEOUT_S = 30.0


def export_labels(url: str, key: str, fmt: str, out: str | None, err: IO[str] = sys.stderr) -> int:
    auth = ("", key) if key else None  # the console takes an operator key as basic auth's password too
    try:
        answer = httpx.get(url.rstrip("/") + "/ui/api/labels", auth=auth, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        print(f"loopguard: cannot reach the gateway at {url}: {exc}", file=err)
        return 1
    if answer.status_code in (401, 403):
        print(f"loopguard: {url} wants an operator key (auth.metrics_keys) in $LOOPGUARD_OPERATOR_KEY", file=err)
        return 1
    try:
        answer.raise_for_status()
        rows = answer.json()["labels"]
        text = write_labels(rows, fmt)
    except (httpx.HTTPError, ValueError, KeyError, TypeError, LabelError) as exc:
        print(f"loopguard: {url} did not answer with labels: {exc}", file=err)
        return 1
    if out:
        Path(out).write_text(text, encoding="utf-8")
        print(f"wrote {len(rows)} labels to {out}", file=err)
    else:
        sys.stdout.write(text)
    return 0
