"""``--json FILE``: every run, every log that could not be read, and the scores, for a script.

``{"runs": [{"path", "id", "format", "agent", "calls", "label", "loop_at", "first_warn",
"first_stop", "actions"}], "errors": [{"path", "reason"}], "scores": {...}}``; calls are 0-based
tool-call indexes, ``null`` where nothing fired. With ``--compare`` the second policy's scores and
runs are under ``scores.compare``.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.replay.model import Result
from gateway.replay.scores import scores


def run_entry(result: Result) -> dict[str, Any]:
    return {
        "path": result.name,
        "id": result.id,
        "format": result.format,
        "agent": result.agent,
        "calls": len(result.rows),
        "label": result.label,
        "loop_at": result.loop_at,
        "first_warn": result.first_warn,
        "first_stop": result.first_stop,
        "actions": result.actions(),
    }


def document(
    results: list[Result],
    errors: list[tuple[str, str]],
    policy: str,
    compared: tuple[str, list[Result]] | None = None,
) -> dict[str, Any]:
    scored: dict[str, Any] = {"policy": policy, **scores(results)}
    if compared is not None:
        name, others = compared
        scored["compare"] = {
            "policy": name,
            **scores(others),
            "runs": [
                {k: v for k, v in run_entry(r).items() if k in ("path", "id", "first_warn", "first_stop", "actions")}
                for r in others
            ],
        }
    return {
        "runs": [run_entry(r) for r in results],
        "errors": [{"path": path, "reason": reason} for path, reason in errors],
        "scores": scored,
    }


def dumps(doc: dict[str, Any]) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
