"""What a protocol declares about itself, as data: everything the rest of the gateway needs to
know about a protocol without reading its wire format.

The server builds its route table, its upstreams and its refusals from these; metrics,
telemetry and replay take their labels and paths from them; the state store its id fields; the
log filter its secret headers. None of them names a protocol: a new one is an adapter carrying
a ``Declaration`` plus its line in ``gateway.protocols.registry``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.upstream.signing import ProviderSettings, Signer


@dataclass(frozen=True, slots=True)
class UpstreamSpec:
    """Where the protocol's traffic goes and how the operator's key is sent there.

    ``config``: the prefix of its settings, ``upstream.<config>_base_url`` /
    ``upstream.<config>_api_key`` (env ``LOOPGUARD_<CONFIG>_BASE_URL``); None: the default
    upstream (``upstream.base_url`` / ``upstream.api_key``, the OpenAI-compatible one).
    A server-side key replaces every credential the client sent (``credentials`` headers and
    ``credential_query`` parameters): neither goes to the provider next to the operator's key.
    """

    config: str | None = None
    default_base_url: str = ""
    # A default base URL that depends on the provider's settings (``extra``, as the signer gets
    # them): a cloud's regional endpoint. None: ``default_base_url``.
    default_url: Callable[[Mapping[str, str]], str] | None = None
    key_header: str = "authorization"  # where the server-side key goes
    key_prefix: str = "Bearer "
    credentials: tuple[str, ...] = ("authorization", "api-key")  # client headers carrying a key
    credential_query: tuple[str, ...] = ()  # query parameters carrying a key (Google's ``?key=``)
    # Other client headers carrying secret material that is no key by itself (an AWS session
    # token beside a signature): never logged, never forwarded once the gateway checks keys.
    secrets: tuple[str, ...] = ()
    # The gateway path's leading ``/v1`` is dropped: the base URL carries its version (OpenAI's
    # ``https://api.openai.com/v1``). False: the path goes whole (Google's ``/v1beta/...``).
    strip_v1: bool = True
    root_suffix: str = ""  # appended to a base URL given as the API root (Anthropic's ``/v1``)
    # The gateway path prefix its routes are served under, left out of the upstream path
    # (``/bedrock``: a client's base URL ``http://gateway/bedrock`` stands for the cloud's root).
    mount: str = ""
    # The upstream path is the client's own spelling (its percent escapes kept), not the decoded
    # path: an AWS model id may be an ARN whose ``/`` is sent as ``%2F``, one path segment, and
    # AWS routes and checks signatures on the raw path. Under the mount such a path may carry
    # ``%2F`` (elsewhere an encoded slash is refused, ``server/paths.py``).
    raw_path: bool = False
    # Its settings besides ``base_url`` / ``api_key`` (``upstream.<config>_<setting>``: a
    # cloud's ``region``), handed to ``signer``.
    settings: tuple[str, ...] = ()
    # A provider that authenticates each request by its bytes (a cloud's request signature, a
    # short-lived token) rather than a fixed key: builds this app's ``Signer`` from the
    # provider's settings; every request to that upstream, relayed or guarded, goes through it.
    signer: Callable[[ProviderSettings], Signer] | None = None
    # A client's ``Authorization`` that is a request signature changes on every request: this
    # reads the part that names the client (AWS's access key id), so its requests share one
    # session namespace; None for a value that is not such a signature.
    signed_client: Callable[[bytes], bytes | None] | None = None


@dataclass(frozen=True, slots=True)
class Owned:
    """A kind of server-side object a tenant creates through the protocol and later names by id.

    With the operator's key every tenant's objects live in one upstream account, so an id the
    caller's tenant did not create is refused (404) before anything is relayed or judged.
    """

    kind: str  # the claim's key and the relayed refusal's word: "response"
    called: str  # how a refused request names it: "Previous response"
    code: str  # the error code the protocol's SDKs know: "previous_response_not_found"
    # The route family naming one by id: ``{collection}/{ident}`` and what hangs below it (any
    # method) is checked against the tenant, ``{ident}`` read up to a ``:method`` suffix
    # (Google's ``cachedContents/{id}:...``). ``GET {collection}`` lists every tenant's objects:
    # refused unless shared. "": named only inside guarded requests.
    collection: str = ""
    # How the answer to a relayed ``POST {collection}`` names the object it created (then
    # claimed for the tenant); None: the collection creates none (the POST is refused).
    creates: Callable[[Any], str | None] | None = None
    # How a guarded request's reply names an object the upstream stored for it, from (request
    # payload, reply): chat's ``store: true`` completion; None: the protocol's history role
    # says (``History.created``), or its replies create none.
    stored: Callable[[Mapping[str, Any], Any], str | None] | None = None
    # Request body keys (at any depth) whose string values, or lists of them, name one: a
    # request naming one its tenant did not create is refused. The answers to a tenant's own
    # objects name more (a batch's ``output_file_id``): their top-level keys here are claimed.
    fields: tuple[str, ...] = ()
    # The ``object`` an OpenAI answer gives one as (an upload's completed ``file``): a top-level
    # object of it in an answer to the tenant's own object is claimed too.
    object: str = ""
    # Google names objects by resource name (``cachedContents/abc``, a file's URI): a field value
    # is read as the segment after ``{resource}/``.
    resource: str = ""
    # A field value names one only when it starts so (a fine-tuned model: ``ft:``; other
    # ``model`` values are the provider's own models).
    prefix: str = ""
    # ``POST {collection}/{action}`` paths that name no object of it (``responses/input_tokens``):
    # relayed with their bodies checked. A ``threads/runs`` answer names the thread it made.
    actions: tuple[str, ...] = ()


def answer_id(answer: Any) -> str | None:
    """The ``id`` of an answer naming the object it created (OpenAI's and Anthropic's APIs)."""
    ident = answer.get("id") if isinstance(answer, dict) else None
    return ident if isinstance(ident, str) and ident else None


def answer_name(answer: Any, field: str = "name") -> str | None:
    """The id in a Google resource name (``{"name": "cachedContents/abc"}``: ``abc``); ``field``
    may be dotted (an operation's ``metadata.tunedModel``)."""
    for step in field.split("."):
        answer = answer.get(step) if isinstance(answer, dict) else None
    if not isinstance(answer, str):
        return None
    parts = answer.split("/")
    return parts[1] if len(parts) > 1 and parts[1] else None


@dataclass(frozen=True, slots=True)
class Declaration:
    """A protocol's facts. ``name`` is the adapter's (metrics label, log field, replay key)."""

    family: str  # the wire protocol's name in traces: "openai.chat_completions", "gemini.generate_content"
    # The paths it is guarded on (POST), in Starlette's path syntax: ``{model}`` matches one
    # path segment or what precedes its ``:method`` suffix (Google's
    # ``/v1beta/models/{model}:generateContent``); parameters reach ``Adapter.at``.
    routes: tuple[str, ...]
    upstream: UpstreamSpec = field(default_factory=UpstreamSpec)
    # Other paths of the protocol, relayed untouched to its upstream with errors in its shape
    # (Anthropic's ``/v1/messages/{rest:path}``: count_tokens), in the same syntax; a leading
    # method (``POST /v1/models/{model}:{method}``) limits one to it.
    relays: tuple[str, ...] = ()
    id_fields: frozenset[str] = frozenset({"id"})  # keys whose values are ids the model made up
    auth_error_type: str = "invalid_request_error"  # the error type of a refused key (401)
    # Whether its event streams may carry SSE comments (the gateway's decision notes and
    # keepalives). False for clients that read every line they do not know as data (google-genai).
    stream_notes: bool = True
    # Methods besides POST the protocol defines on its guarded paths, relayed untouched (chat's
    # GET lists stored completions). Any other method there is refused (405): relayed, it would
    # reach the upstream's model endpoint unjudged.
    other_methods: tuple[str, ...] = ()
    owned: tuple[Owned, ...] = ()  # its tenant-owned objects (``Owned``)
    # Relayed routes known to store nothing (model lists, embeddings, token counts), in the
    # ``relays`` syntax: with a server-side key they go freely. Every other relayed route that
    # is no ``owned`` family is refused then unless the operator shares it (``auth.shared_routes``):
    # the upstream cannot tell whose objects it names or lists.
    stateless: tuple[str, ...] = ()
    # Its upstream's other routes that call a model the gateway cannot judge (a body or reply
    # in a format it does not speak), in the ``relays`` syntax: refused (403) unless the
    # operator relays them unjudged (``upstream.unjudged_routes``). Relayed, a looping tool
    # call would reach the client unseen.
    unjudged: tuple[str, ...] = ()
    # The content type of the event streams the gateway writes itself (a termination at the
    # request): the protocol's own stream type (AWS event streams are binary frames).
    stream_type: str = "text/event-stream"
    # Whether its sessions' stored keys carry the adapter's name ("responses:f:..."): each
    # protocol's conversations are sessions of their own. False only for the protocol whose
    # keys were stored before any other was guarded (chat), so they stay as stored.
    session_prefix: bool = True
    # The price table's provider prefix for its model ids, where the table lists a cloud's ids
    # apart (litellm's ``vertex_ai/``): tried first when savings are priced.
    price_prefix: str = ""
    # Whether a recorded request body (``loopguard replay``) is one of this protocol's. The
    # registry asks the adapters in its order: the most specific reader first.
    reads: Callable[[Mapping[str, Any]], bool] = lambda body: False

    @property
    def secret_headers(self) -> frozenset[str]:
        """Request headers never written to a log: they carry a key."""
        return frozenset((*self.upstream.credentials, *self.upstream.secrets, self.upstream.key_header))
