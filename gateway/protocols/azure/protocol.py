"""Azure OpenAI as two guarded protocols: chat completions (``azure_chat``) and the Responses
API (``azure_responses``), on the paths ``AzureOpenAI`` clients send.

The bodies are OpenAI's: each protocol is the chat or Responses package's roles (the Responses
history role built per app, as the ``responses`` protocol builds its own) under an Azure
declaration. What differs is the wire around the body:
- paths: ``/openai/deployments/{deployment}/chat/completions?api-version=...`` (``azure_endpoint``
  clients), ``/openai/responses?api-version=...`` (their Responses calls, with or without
  ``azure_deployment``), ``/openai/deployments/{deployment}/responses`` (a client whose base URL
  ends in the deployment), and the v1 routes ``/openai/v1/chat/completions`` /
  ``/openai/v1/responses``. Path and query go to the resource as the client sent them (no
  ``/v1`` is dropped: the base URL is the resource's root);
- the model is the deployment a path names (``deployment.Deployments``), else the body's;
- credentials: the client's ``api-key`` or Entra ``Authorization: Bearer`` token is forwarded,
  or both are replaced by the operator's ``upstream.azure_api_key`` (sent as ``api-key``);
- the resource: ``upstream.azure_base_url`` (``https://<resource>.openai.azure.com``). There is
  no default: every resource has its own host. Unset, Azure routes answer 501 naming the key.
Every other ``/openai/...`` route is relayed to the resource in OpenAI's error shape, its
stored-object families checked per tenant with the operator's key (``objects``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gateway.protocols.azure.deployment import bound
from gateway.protocols.azure.objects import AZURE_OWNED, AZURE_STATELESS, V1, VERSIONED, on_azure
from gateway.protocols.chat import protocol as chat
from gateway.protocols.declaration import UpstreamSpec
from gateway.protocols.responses import protocol as responses
from gateway.protocols.roles import Adapter, Kind

__all__ = ["CHAT_KIND", "RESPONSES_KIND"]

UPSTREAM = UpstreamSpec(
    config="azure",
    default_base_url="",  # none: the operator names the resource (``upstream.azure_base_url``)
    key_header="api-key",
    key_prefix="",
    credentials=("api-key", "authorization"),
    strip_v1=False,  # ``/openai/...`` goes whole: the base URL is the resource's root
)
DEPLOYMENT = VERSIONED + "/deployments/{deployment}"
V1_DEPLOYMENT = V1 + "/deployments/{deployment}"


def _never(body: Any) -> bool:
    """A recorded body is read as plain chat or Responses (``loopguard replay``): the same body."""
    return False


CHAT_DECLARED = replace(
    chat.DECLARED,
    family="azure_openai.chat_completions",
    routes=(
        V1 + "/chat/completions",
        VERSIONED + "/chat/completions",
        DEPLOYMENT + "/chat/completions",
        V1_DEPLOYMENT + "/chat/completions",
    ),
    upstream=UPSTREAM,
    # Completions stored with ``store: true``, read, listed and deleted at either root.
    owned=tuple(azure for kind in chat.DECLARED.owned for azure in on_azure(kind)),
    session_prefix=True,
    reads=_never,
)

RESPONSES_DECLARED = replace(
    responses.DECLARED,
    family="azure_openai.responses",
    routes=(V1 + "/responses", VERSIONED + "/responses", DEPLOYMENT + "/responses", V1_DEPLOYMENT + "/responses"),
    upstream=UPSTREAM,
    # The resource's other routes (files, batches, models, deployments, embeddings, ...).
    relays=(VERSIONED + "/{rest:path}",),
    owned=AZURE_OWNED,
    stateless=AZURE_STATELESS,
    # "On your data" chat (its own reply shape, the retrieved documents as messages of their own).
    unjudged=tuple(f"{root}/extensions/chat/completions" for root in (DEPLOYMENT, V1_DEPLOYMENT)),
    reads=_never,
)

# Memoryless, as chat's: the same adapter in every app.
CHAT = bound(replace(chat.ADAPTER, name="azure_chat", declared=CHAT_DECLARED))


def _chat() -> Adapter:
    return CHAT


def _responses() -> Adapter:
    """The Responses protocol for one app (its own memory of replies and chains), on Azure."""
    return bound(replace(responses.build(), name="azure_responses", declared=RESPONSES_DECLARED))


CHAT_KIND = Kind(CHAT.name, CHAT_DECLARED, chat.REQUESTS, chat.KIND.authored, _chat)
RESPONSES_KIND = Kind("azure_responses", RESPONSES_DECLARED, responses.REQUESTS, responses.KIND.authored, _responses)
