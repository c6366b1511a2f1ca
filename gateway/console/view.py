"""The console's reading of the kept events: each one parsed once (``Item``), and the keys that
pair an intervention with its savings event and group a run's events. ``gateway.console.ledger``
keeps the feed and the totals over them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from gateway.state.events import LoggedEvent

STOPS = ("reject", "terminate")


@dataclass(slots=True)
class Item:
    id: str
    data: dict[str, Any]
    detail: str | None
    seq: int = 0  # order of arrival in the reader's window: greater is newer


def parse(logged: list[LoggedEvent]) -> list[Item]:
    """Newest first, as stored; unreadable entries skipped (another version may have written them)."""
    return [item for one in logged if (item := read(one)) is not None]


def read(one: LoggedEvent) -> Item | None:
    try:
        data = orjson.loads(one.entry)
    except orjson.JSONDecodeError:
        return None
    return Item(one.id, data, one.detail) if isinstance(data, dict) and data.get("k") in ("i", "s") else None


# (request_id, detector, action): what pairs an intervention with its savings event.
JoinKey = tuple[object, object, object]
# (session, run): one agent run, counted once per tally however many events it has.
Run = tuple[object, object]


def join_key(d: dict[str, Any]) -> JoinKey:
    return (d.get("request_id"), d.get("detector"), d.get("action"))
