"""What the console's status panel reads: the policy in effect (name, file, when it was loaded,
reload errors, each per-agent override and what it matches), the state backend's health, and
the console's own event log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.check import raw_matches
from gateway.context import Gateway
from gateway.policy.engine import EffectivePolicy


async def status(gateway: Gateway) -> dict[str, Any]:
    holder, policy = gateway.policies, gateway.policies.current
    sink = gateway.audit.find("console")
    matches = raw_matches(policy.source)  # as written: globs, not their compiled patterns
    return {
        "policy": {
            "name": policy.name,
            "file": str(holder.path),
            "loaded_at": _iso(getattr(holder, "loaded_at", None)),
            "reloads": holder.reloads,
            "reload_errors": holder.reload_errors,
            "last_error": holder.last_error,
            "default": _block(policy.default),
            "overrides": [
                {
                    "agent": rule.label,
                    "match": _match(rule, matches[n] if n < len(matches) else None),
                    **_block(rule.policy),
                }
                for n, rule in enumerate(policy.rules)
            ],
        },
        "state": {
            "backend": gateway.config.state.backend,
            "healthy": await gateway.store.ping(),
            "degradations": gateway.store.degradations,
        },
        "console": {
            "keep": gateway.config.ui.max_events,
            "written": getattr(sink, "written", 0),
            "dropped": getattr(sink, "dropped", 0),
        },
    }


def _block(eff: EffectivePolicy) -> dict[str, Any]:
    ladders = {name: [s.warn_at, s.reject_at, s.terminate_at] for name, s in eff.detectors.items()}
    return {"mode": eff.mode, "max_action": eff.max_action.label, "detectors": ladders}


def _match(rule: Any, written: Any) -> dict[str, Any]:
    found = dict(written) if isinstance(written, dict) else {"agent": rule.header}
    if rule.api_key_sha256:  # enough to recognise the key, not to be it
        found["api_key_sha256"] = rule.api_key_sha256[:12] + "\u2026"
    return {k: v for k, v in found.items() if v}


def _iso(stamp: float | None) -> str | None:
    if stamp is None:
        return None
    return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
