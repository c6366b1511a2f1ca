"""The deployment a request's path names, as its model.

Azure serves a model through a deployment the operator named: ``/openai/deployments/{name}/
chat/completions`` names it in the path, and whatever ``model`` the body says, that deployment
answers. So the deployment is the model the policy, the metrics and the savings read. The v1
routes (``/openai/v1/...``) and ``/openai/responses`` name it in the body's ``model``, read as
every OpenAI request's is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gateway.protocols.roles import Adapter

_ROOTS = ("/openai/deployments/", "/openai/v1/deployments/")


def deployment_of(path: str) -> str | None:
    """``/openai/deployments/{name}/...`` (or under ``/openai/v1/``) -> ``name``; None for a
    path naming none."""
    root = next((r for r in _ROOTS if path.startswith(r)), None)
    if root is None:
        return None
    name, slash, _ = path[len(root) :].partition("/")
    return name if name and slash else None


@dataclass(frozen=True, slots=True)
class Named:
    """A request's model read from its path, not its body."""

    deployment: str

    def __call__(self, payload: dict[str, Any]) -> str:
        return self.deployment


@dataclass(frozen=True, slots=True)
class Deployments:
    """Binds one app's adapter to the deployment a request's path names (``Adapter.binds``):
    the same roles and memory, with that deployment as the request's model."""

    adapter: Adapter

    def at(self, scope: dict[str, Any]) -> Adapter:
        name = deployment_of(scope["path"])
        if name is None:
            return self.adapter
        return replace(self.adapter, requests=replace(self.adapter.requests, model=Named(name)))


def bound(adapter: Adapter) -> Adapter:
    """``adapter`` reading its model from a deployment path where the path names one."""
    return replace(adapter, binds=Deployments(adapter).at)
