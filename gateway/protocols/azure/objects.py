"""What an Azure OpenAI resource keeps and what it does not, on Azure's paths.

An Azure resource stores the same objects as the OpenAI API (responses, conversations, files,
batches, fine-tuning jobs, vector stores, ...) under ``/openai/<family>`` (the versioned
routes, ``?api-version=``) and ``/openai/v1/<family>`` (the v1 routes): with the operator's key
every tenant's objects share the resource, so each family is checked against the caller's
tenant exactly as OpenAI's are (``Declaration.owned``, docs/tenancy.md). Its model and
deployment lists and its deployment-bound endpoints that keep nothing (embeddings, audio,
images) are declared stateless; every other ``/openai/...`` route is relayed to the resource,
refused with a shared key unless the operator shares it.
"""

from __future__ import annotations

from dataclasses import replace

from gateway.protocols.declaration import Owned
from gateway.protocols.openai_objects import OWNED, STATELESS

# The two roots of Azure's data plane: the versioned routes first, then the v1 routes.
VERSIONED, V1 = "/openai", "/openai/v1"

# The deployment-bound endpoints besides chat (the openai SDK's ``_deployments_endpoints``):
# each keeps nothing of a request.
DEPLOYMENT_ENDPOINTS = (
    "embeddings",
    "completions",
    "audio/speech",
    "audio/transcriptions",
    "audio/translations",
    "images/generations",
    "images/edits",
)


def on_azure(kind: Owned) -> tuple[Owned, ...]:
    """An OpenAI family (``/v1/files``) at both Azure roots (``/openai/v1/files``,
    ``/openai/files``). The same kind: an id a guarded request created is claimed once, and
    found whichever root names it later. A reply's stored object is claimed by the first only."""
    if not kind.collection.startswith("/v1/"):
        return (kind,)  # named only inside requests (a fine-tuned ``model``)
    family = kind.collection.removeprefix("/v1")
    return replace(kind, collection=V1 + family), replace(kind, collection=VERSIONED + family, stored=None)


def azure_rule(rule: str) -> str:
    """An OpenAI stateless route (``GET /v1/models``) on the v1 root."""
    method, _, path = rule.rpartition(" ")
    return f"{method} {V1}{path.removeprefix('/v1')}"


AZURE_OWNED: tuple[Owned, ...] = tuple(azure for kind in OWNED for azure in on_azure(kind))

AZURE_STATELESS: tuple[str, ...] = (
    *(azure_rule(rule) for rule in STATELESS),
    f"GET {VERSIONED}/models",
    f"GET {VERSIONED}/models/{{model}}",
    f"GET {VERSIONED}/deployments",
    f"GET {VERSIONED}/deployments/{{deployment}}",
    *(f"POST {VERSIONED}/deployments/{{deployment}}/{endpoint}" for endpoint in DEPLOYMENT_ENDPOINTS),
)
