"""Model calls the gateway cannot judge are refused, unless the operator relays them unjudged.

A cloud serves more model-calling APIs than the gateway speaks: a container deployed to a
Vertex endpoint answers ``:rawPredict`` in its own format, Azure's "on your data" chat answers
in its own shape, Bedrock's bidirectional stream carries speech. Relayed like any other path of
the cloud, each would hand a looping tool call to the client unseen. Each protocol declares
the ones its upstream serves (``Declaration.unjudged``); a request to one is refused (403, in
the protocol's error shape) naming the setting that relays it (``upstream.unjudged_routes``),
unless a guarded route claims it first (Anthropic's ``count-tokens:rawPredict`` on Vertex is
Anthropic's protocol's to relay). Matched on the routing key too (case folded, ``;parameters``
dropped), as the upstream's router may read the path, for every method.
"""

from __future__ import annotations

from typing import Any

from gateway.config import UpstreamConfig
from gateway.protocols.registry import UNJUDGED, compile_route, guarded_route
from gateway.server.paths import routing_key
from gateway.server.refusal import Refusal
from gateway.web.sharing import rules


class UnjudgedCalls:
    """A request gate: see the module."""

    def __init__(self, config: UpstreamConfig) -> None:
        self.patterns = tuple(regex for regex, _ in UNJUDGED)
        self.keys = tuple(compile_route(routing_key(route)) for _, route in UNJUDGED)
        self.relayed = rules(config.unjudged_routes)
        # Every declared route lies under a mount: a path outside them all is let on at once.
        self.roots = tuple({"/" + route.split("/")[1] for _, route in UNJUDGED})

    def __call__(self, scope: dict[str, Any]) -> dict[str, Any] | Refusal:
        path: str = scope["path"]
        if not path.lower().startswith(self.roots):
            return scope
        key = routing_key(path)
        if not any(r.match(path) for r in self.patterns) and not any(r.match(key) for r in self.keys):
            return scope
        method = scope["method"]
        if guarded_route(path) is not None or any(rule.covers(method, path) for rule in self.relayed):
            return scope
        return Refusal(
            403,
            f"{method} {path} calls a model through an API the gateway does not judge, so a "
            "looping tool call there would reach the client unseen; it is refused. An operator "
            "may relay it unjudged in upstream.unjudged_routes.",
            "permission_error",
            "route_not_judged",
        )
