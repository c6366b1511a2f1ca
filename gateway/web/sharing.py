"""Which relayed routes the operator's upstream key serves when tenants share it.

With a server-side key the upstream cannot tell tenants apart: whatever one tenant stored there,
another could list, read or delete by naming it. So, for an upstream the gateway spends its own
key on (``claims.enforced``), a relayed request goes on only when its route
- names a stored object of a declared family (``Declaration.owned``): checked against the
  caller's tenant (``server/object_paths.py``);
- is known to store nothing (``Declaration.stateless``: model lists, embeddings, token counts);
- or is shared by the operator (``auth.shared_routes``), every tenant seeing every object there.
Anything else (a list of every tenant's files, an API the gateway does not know) is refused
with 403, naming ``auth.shared_routes``. Without a server-side key each client's own key keeps
tenants apart upstream, and every route is relayed as before.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.responses import Response

from gateway.config import Config
from gateway.protocols.declaration import Owned
from gateway.protocols.registry import compile_route, relay_route
from gateway.protocols.roles import Adapter
from gateway.state import claims
from gateway.web.responses import Shape, error_response


@dataclass(frozen=True, slots=True)
class Rule:
    """A route pattern (``[METHOD ]/path``, ``{name}`` one segment) and the methods it covers."""

    regex: re.Pattern[str]
    methods: frozenset[str] | None  # None: every method

    def covers(self, method: str, path: str) -> bool:
        """A ``GET`` rule covers ``HEAD`` too: the same answer without its body."""
        allowed = self.methods is None or method in self.methods or (method == "HEAD" and "GET" in self.methods)
        return allowed and self.regex.match(path) is not None


def rules(entries: Iterable[str], below: bool = False) -> tuple[Rule, ...]:
    """``below``: a pattern covers the paths under it too (a shared family)."""
    out = []
    for entry in entries:
        path, methods = relay_route(entry.strip())
        regex = compile_route(path.rstrip("/") or "/")
        if below:
            regex = re.compile(regex.pattern.removesuffix(r"\Z") + r"(?:/.*)?\Z")
        out.append(Rule(regex, frozenset(m.upper() for m in methods) if methods else None))
    return tuple(out)


def is_shared(config: Config, method: str, path: str) -> bool:
    """Has the operator shared the route (``auth.shared_routes``)?"""
    return any(rule.covers(method, path) for rule in _rules(config.auth.shared_routes, True))


def family_shared(config: Config, kind: Owned) -> bool:
    """Every route of the family is shared: its ids are no tenant's to check, in bodies too."""
    return bool(kind.collection) and is_shared(config, "GET", kind.collection + "/-")


def free(config: Config, adapters: Iterable[Adapter], adapter: Adapter, method: str, path: str) -> bool:
    """May a relayed request to ``adapter``'s upstream go on without a tenant check?"""
    if not claims.enforced(config, adapter.declared.upstream.config):
        return True
    stateless = (r for a in _same_upstream(adapters, adapter) for r in _rules(a.declared.stateless, False))
    return any(rule.covers(method, path) for rule in stateless) or is_shared(config, method, path)


def kinds(config: Config, adapters: Iterable[Adapter], adapter: Adapter) -> tuple[Owned, ...]:
    """The families kept by ``adapter``'s upstream (a chat request may name a file the
    Responses protocol declares), less the ones the operator shared."""
    return tuple(
        kind for a in _same_upstream(adapters, adapter) for kind in a.declared.owned if not family_shared(config, kind)
    )


def _same_upstream(adapters: Iterable[Adapter], adapter: Adapter) -> list[Adapter]:
    return [a for a in adapters if a.declared.upstream.config == adapter.declared.upstream.config]


@functools.lru_cache(maxsize=64)
def _rules(entries: tuple[str, ...], below: bool) -> tuple[Rule, ...]:
    return rules(entries, below)


def not_shared(method: str, path: str, shape: Shape) -> Response:
    """The refusal of a route the upstream cannot check per tenant."""
    return error_response(
        403,
        f"{method} {path} is not relayed: the gateway's upstream key is shared by every tenant and "
        "this route is not checked per tenant (it lists or names objects the gateway cannot tell "
        "apart, or stores what it does not know). An operator may allow it in auth.shared_routes.",
        "permission_error",
        "route_not_shared",
        shape=shape,
    )


def not_found(adapter: Adapter, kind: Owned | None, ident: str) -> Response:
    """As the upstream answers an id it does not know, in the protocol's shape (``kind`` None:
    a kind no protocol declares, named as an object)."""
    what, code = (kind.called, kind.code) if kind is not None else ("Object", "not_found")
    return error_response(
        404,
        f"{what} with id '{ident}' not found.",
        "not_found_error",
        code,
        shape=adapter.authored.error_body,
    )


def malformed(adapter: Adapter, key: str) -> Response:
    return error_response(
        400,
        f"'{key}' must be an id (a string): the gateway checks every object a request names.",
        "invalid_request_error",
        "invalid_reference",
        shape=adapter.authored.error_body,
    )
