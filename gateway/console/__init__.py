"""The operator console at ``/ui``: what was warned, vetoed or stopped, why, and what it saved.

The audit bus feeds it (``sink``): each event, with a masked, capped excerpt of its run's
timeline, goes into the state store's recent-events log, bounded in count and bytes (memory:
this process's ring; Redis: streams every replica reads). The pages read that log (``view``).
"""

from __future__ import annotations

from starlette.routing import Route

from gateway.context import Gateway


def console(gateway: Gateway) -> list[Route]:
    """Put the console's sink on the audit bus and return its routes; [] when ``ui.enabled`` is
    off. Called before the savings sink is added, so the console gets the savings events too."""
    ui = gateway.config.ui
    if not ui.enabled:
        return []
    from gateway.console.routes import Console
    from gateway.console.sink import ConsoleSink

    gateway.audit.add(ConsoleSink(gateway.store, keep=ui.max_events, max_run_bytes=ui.max_run_bytes))
    return Console(gateway).routes()
