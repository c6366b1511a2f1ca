"""The console's fleet panel (``/ui/api/fleet``): remote tools down now, per tenant, with the
sessions affected, when first and last seen, and one failure's text, masked (``mask``). An
operator sees every tenant's; a tenant's key only its own."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.console.mask import excerpt
from gateway.console.tenants import Tenancy
from gateway.fleet.service import Fleet

SAMPLE_CHARS = 160


async def tools_down(fleet: Fleet | None, space: str | None, tenancy: Tenancy) -> dict[str, Any]:
    if fleet is None:
        return {"enabled": False, "tools": []}
    found = await fleet.health(space)
    rows = [
        {
            "tenant": tenancy.names.get(h.tenant) or ("-" if not h.tenant else h.tenant[:10] + "\u2026"),
            "tool": h.tool,
            "endpoint": h.endpoint,
            "sessions": h.sessions,
            "calls": h.calls,
            "first_seen": _iso(h.first),
            "last_seen": _iso(h.last),
            "down_since": _iso(h.down_since),
            "error": excerpt(h.sample, SAMPLE_CHARS) or "",
        }
        for h in sorted(found, key=lambda h: -h.last)
    ]
    rule = fleet.rule
    return {"enabled": True, "sessions": rule.sessions, "minutes": round(rule.window_s / 60, 1), "tools": rows}


def _iso(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
