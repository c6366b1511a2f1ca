"""Labels: which runs were loops, read from a file an operator wrote (or the console exported).

A label names a run by its path relative to the argument it was found under (what the replay's
table and JSON call ``path``), or by the session id its log records (``id``), and says ``loop``,
``healthy`` or ``borderline``; ``loop_at`` is the 0-based index of the tool call where the run
became a loop. CSV with a header (``run,label,loop_at,note``; ``path``, ``id`` or ``session`` may
stand for ``run``), or JSON: a list of such objects, ``{"labels": [...]}``, or a mapping from
run to its label (a string, or ``{"label", "loop_at"}``). A label the log itself carries (a
labelled corpus) counts unless the file labels the run too.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from gateway.replay.run import Run

LABELS = ("loop", "healthy", "borderline")
COLUMNS = ("run", "label", "loop_at", "note")
_KEYS = ("run", "path", "id", "session")


class LabelError(ValueError):
    """A labels file that cannot be used: ``str()`` names the file, the entry and the problem."""


@dataclass(frozen=True, slots=True)
class Label:
    label: str
    loop_at: int | None = None
    note: str = ""


class Labels:
    def __init__(self, by_key: Mapping[str, Label] | None = None) -> None:
        self.by_key = dict(by_key or {})
        self.used: set[str] = set()  # keys that named a replayed run

    def __len__(self) -> int:
        return len(self.by_key)

    def of(self, run: Run) -> Label | None:
        """The run's label: by its path, else its session id, else what its log says."""
        for key in (run.name, run.id):
            found = self.by_key.get(key)
            if found is not None:
                self.used.add(key)
                return found
        return Label(run.label, run.loop_at) if run.label else None

    def unused(self) -> list[str]:
        """Keys that named no replayed run (a typo, a log not given): worth a note."""
        return sorted(set(self.by_key) - self.used)


def read_labels(path: str | Path) -> Labels:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelError(f"{path}: cannot read: {exc}") from None
    entries = _json(path, text) if text.lstrip()[:1] in ("[", "{") else _csv(text)
    found: dict[str, Label] = {}
    for where, entry in entries:
        key, label = _entry(f"{path}: {where}", entry)
        if key in found:
            raise LabelError(f"{path}: {where}: {key!r} is labelled twice")
        found[key] = label
    return Labels(found)


def _json(path: Path, text: str) -> list[tuple[str, Any]]:
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise LabelError(f"{path}: invalid JSON: {exc}") from None
    if isinstance(document, dict) and isinstance(document.get("labels"), list):
        document = document["labels"]
    if isinstance(document, list):
        return [(f"labels[{n}]", entry) for n, entry in enumerate(document)]
    if isinstance(document, dict):
        return [
            (f"{key!r}", {"run": key, **(value if isinstance(value, dict) else {"label": value})})
            for key, value in document.items()
        ]
    raise LabelError(f"{path}: expected a list of labels or a mapping from run to label")


def _csv(text: str) -> list[tuple[str, Any]]:
    rows = csv.DictReader(io.StringIO(text))
    return [(f"line {rows.line_num}", {k.strip().lower(): v for k, v in row.items() if k}) for row in rows]


def _entry(where: str, entry: Any) -> tuple[str, Label]:
    if not isinstance(entry, dict):
        raise LabelError(f"{where}: expected an object with run and label")
    key = next((str(entry[k]).strip() for k in _KEYS if entry.get(k) not in (None, "")), None)
    if key is None:
        raise LabelError(f"{where}: no run (its path, or its session id)")
    label = str(entry.get("label") or "").strip().lower()
    if label not in LABELS:
        raise LabelError(f"{where}: label must be one of {', '.join(LABELS)}, not {entry.get('label')!r}")
    raw = entry.get("loop_at")
    if raw in (None, ""):
        loop_at = None
    else:
        try:
            loop_at = int(str(raw).strip())
        except ValueError:
            raise LabelError(f"{where}: loop_at must be a tool-call index (0, 1, ...), not {raw!r}") from None
        if loop_at < 0:
            raise LabelError(f"{where}: loop_at must be 0 or more, not {loop_at}")
    return key, Label(label, loop_at, str(entry.get("note") or ""))


def write_labels(entries: Iterable[Mapping[str, Any]], fmt: str = "csv") -> str:
    """``entries`` (``run``, ``label``, ``loop_at``, ``note``) in the format ``read_labels`` reads."""
    rows = [{c: entry.get(c) for c in COLUMNS} for entry in entries]
    if fmt == "json":
        return orjson.dumps(rows, option=orjson.OPT_INDENT_2).decode() + "\n"
    out = io.StringIO()
    writer = csv.DictWriter(out, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows({k: "" if v is None else v for k, v in row.items()} for row in rows)
    return out.getvalue()
