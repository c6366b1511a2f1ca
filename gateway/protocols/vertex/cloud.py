"""What the two Vertex AI protocols share: one upstream, one mount, one token rule.

Clients name the gateway's ``/vertex`` as their Vertex endpoint (google-genai
``base_url="http://gateway:8080/vertex/"``, ``ANTHROPIC_VERTEX_BASE_URL=http://gateway:8080/vertex/v1``)
and every path below it goes to ``upstream.vertex_base_url`` whole, its version included. The
path names the project and location (``/v1/projects/{p}/locations/{l}/...``), so the base URL is
the endpoint those live behind: the global one by default, a regional one
(``https://us-east5-aiplatform.googleapis.com``) set by the operator whose models are regional.
"""

from __future__ import annotations

from functools import partial

from gateway.protocols.declaration import UpstreamSpec
from gateway.upstream import google_token

MOUNT = "/vertex"
VERSIONS = ("v1", "v1beta1")
# The resource path every model method sits under.
LOCATED = "/{version}/projects/{project}/locations/{location}"
# A client's OAuth access token; an API key (Vertex's express mode) in a header or ``?key=``.
_CREDENTIALS = ("authorization", "x-goog-api-key")
# litellm's price table lists Vertex's model ids (``claude-sonnet-4-5@20250929``) under this.
PRICED = "vertex_ai/"
# Under the gateway's token the gateway's project pays: a client's quota project is not sent
# beside it (it would bill the project the client names to the operator's credentials).
TOKEN = google_token.TokenPlace("authorization", "Bearer ", (*_CREDENTIALS, "x-goog-user-project"))

UPSTREAM = UpstreamSpec(
    config="vertex",
    default_base_url="https://aiplatform.googleapis.com",
    key_header="x-goog-api-key",  # ``upstream.vertex_api_key``: an express-mode API key
    key_prefix="",
    credentials=_CREDENTIALS,
    credential_query=("key",),
    strip_v1=False,
    mount=MOUNT,
    # ``upstream.vertex_credentials``: ``client`` (the client's token forwarded) or ``gateway``
    # (google-auth's default chain, its token in place of the client's).
    settings=("credentials",),
    signer=partial(google_token.signer, TOKEN),
)
# Every other Vertex path (token counts, cached contents, endpoints, ...) goes to the same
# upstream with the same token; only token counts are known to keep nothing.
RELAYS = (MOUNT + "/{rest:path}",)
STATELESS = tuple(
    f"POST {MOUNT}/{version}{located}/publishers/{publisher}"
    for version in VERSIONS
    for located in ("/projects/{project}/locations/{location}", "")  # "": express mode's
    for publisher in (
        "google/models/{model}:countTokens",
        "google/models/{model}:computeTokens",
        "anthropic/models/count-tokens:rawPredict",
    )
)
# Prediction methods of endpoints and publisher models whose bodies the gateway does not read
# (a deployed container's own format, another publisher's, an agent engine's): refused unless
# the operator relays them unjudged. Gemini's, Anthropic's and the OpenAI-compatible chat
# completions are guarded wherever they are called under the mount.
PREDICTIONS = (
    "rawPredict",
    "streamRawPredict",
    "predict",
    "serverStreamingPredict",
    "streamingPredict",
    "directPredict",
    "directRawPredict",
    "streamingRawPredict",
    "predictLongRunning",
    "explain",
    "query",
    "streamQuery",
)
UNJUDGED = (
    *(f"{MOUNT}/{{rest:path}}:{method}" for method in PREDICTIONS),
    f"{MOUNT}/{{rest:path}}/invoke/{{call:path}}",
)
