"""Gateway configuration: YAML with ``${VAR}`` / ``${VAR:-default}`` interpolation, strict schema.

Every error names the file and the key path, because operators edit this file by hand and the
first thing they need to know is where the mistake is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """An invalid configuration file: ``file``, dotted ``path`` of the key, ``reason``.

    ``problems`` holds every (path, reason) found, so an operator fixes the file in one pass
    instead of one error per restart; ``path`` and ``reason`` are the first of them.
    """

    def __init__(self, file: str, path: str, reason: str, more: tuple[tuple[str, str], ...] = ()) -> None:
        self.file, self.path, self.reason = file, path, reason
        self.problems: tuple[tuple[str, str], ...] = ((path, reason), *more)
        super().__init__("\n".join(_line(file, p, r) for p, r in self.problems))


def _line(file: str, path: str, reason: str) -> str:
    return f"{file}: {path}: {reason}" if path else f"{file}: {reason}"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Strict):
    host: str = Field("127.0.0.1", description="bind address; `0.0.0.0` to accept other hosts (`--host` overrides)")
    port: int = Field(8080, ge=0, le=65535, description="port (`--port` overrides)")
    # Each worker is a whole gateway; sessions are shared across them only by the redis backend.
    workers: int = Field(
        1,
        ge=1,
        description="processes serving the port (`--workers` overrides); "
        "more than one needs `state.backend: redis` to share sessions",
    )
    forwarded_allow_ips: tuple[str, ...] = Field(
        ("127.0.0.1",),
        description="proxies (IPs, CIDRs, `*` for any) whose `X-Forwarded-Proto` / `X-Forwarded-For` "
        "are believed (uvicorn's proxy headers): the console's cookie is `Secure` when a trusted "
        "proxy says the client spoke https; `[]`: no proxy is believed",
    )


class UpstreamConfig(_Strict):
    base_url: str = Field(
        "https://api.openai.com/v1",
        description="any OpenAI-compatible base URL; env `LOOPGUARD_UPSTREAM_BASE_URL` overrides",
    )
    api_key: str | None = Field(
        None,
        description="server-side key replacing the client's Authorization; unset: each client's own key is forwarded",
    )
    # LLM calls can legitimately take minutes.
    timeout_s: float = Field(
        600.0,
        gt=0,
        description="a JSON answer: the whole response (headers and "
        "body) within this, else 504; a stream: its first byte (the response "
        "headers) within this, else 504",
    )
    stream_idle_timeout_s: float | None = Field(
        None,
        gt=0,
        description="a stream: the longest silence "
        "between two chunks, else it is ended with the "
        "protocol's error event; unset: `timeout_s`",
    )
    connect_timeout_s: float = Field(10.0, gt=0, description="connect timeout (502 when exceeded)")
    headers: dict[str, str] = Field(
        {}, description="extra headers sent upstream, e.g. `{OpenAI-Organization: org-...}`"
    )
    max_connections: int = Field(512, ge=1, description="pooled keep-alive connections")
    transport: Literal["aiohttp", "httpx"] = Field(
        "aiohttp", description="HTTP client to the upstream: `aiohttp` (the cheaper hop) or `httpx`"
    )
    unjudged_routes: tuple[str, ...] = Field(
        (),
        description="model calls of a cloud's API the gateway does not judge (Vertex "
        "`:rawPredict` of an endpoint or of a publisher other than Google and Anthropic, Azure "
        "`extensions/chat/completions`, Bedrock `invoke-with-bidirectional-stream`, ...) that "
        "are relayed anyway, as `[METHOD ]/path` (`{name}`: one segment, `{name:path}`: the "
        "rest); a looping tool call there reaches the client unjudged (docs/clouds.md). Empty: "
        "each is refused with 403",
    )
    # Every other provider's settings are ``<provider>_base_url`` / ``<provider>_api_key`` keys,
    # one pair per protocol adapter that names its own upstream (``UpstreamSpec.config``, which
    # also holds the default base URL): a new protocol needs no new field here. Their shape is
    # checked at load; that a protocol reads them, when the app is built (``unclaimed``). Held
    # here, gathered from the section's keys.
    providers: dict[str, str] = Field(
        {},
        description="the other providers' settings (a protocol's own upstream), "
        "written as `<provider>_base_url` / `<provider>_api_key` keys of this section, e.g. "
        "`anthropic_base_url` (default `https://api.anthropic.com`, the API root as "
        "`ANTHROPIC_BASE_URL`; a trailing `/v1` is accepted) and `anthropic_api_key` (sent as "
        "`x-api-key`), `gemini_base_url`, `gemini_api_key`, `azure_base_url` (the Azure OpenAI "
        "resource, `https://<resource>.openai.azure.com`; no default: unset, Azure routes answer "
        "501) and `azure_api_key` (sent as `api-key`), `bedrock_base_url` (default the regional "
        "endpoint of `bedrock_region`), `bedrock_region` and `bedrock_api_key` (a Bedrock API key, "
        "sent as a bearer token; unset: requests are signed with AWS's standard credential chain), "
        "`vertex_base_url` (default `https://aiplatform.googleapis.com`) and `vertex_credentials` "
        "(`client`: the client's token is forwarded; `gateway`: google-auth's default chain, whose "
        "token replaces it). A key replaces the client's "
        "credentials; unset: each client's own key is forwarded. Env "
        "`LOOPGUARD_<PROVIDER>_BASE_URL` overrides a base URL",
    )

    def provider(
        self, name: str, default_base_url: str, root_suffix: str = "", env: Mapping[str, str] | None = None
    ) -> UpstreamConfig:
        """The same transport settings aimed at provider ``name``: ``<name>_base_url`` (env
        ``LOOPGUARD_<NAME>_BASE_URL`` first, else the default), with ``root_suffix`` appended to a
        base URL given as the API root. The OpenAI key and headers stay behind: they belong to
        the other provider."""
        env = os.environ if env is None else env
        root = (
            env.get(f"LOOPGUARD_{name.upper()}_BASE_URL") or self.setting(name, "base_url") or default_base_url
        ).rstrip("/")
        if root_suffix and not root.endswith(root_suffix):
            root += root_suffix
        return self.model_copy(update={"base_url": root, "api_key": None, "headers": {}})

    def setting(self, provider: str, key: str) -> str | None:
        """``<provider>_<key>`` (``base_url``, ``api_key``), or None when unset."""
        return self.providers.get(f"{provider}_{key}") or None

    def unclaimed(self, providers: Mapping[str, Iterable[str]]) -> list[str]:
        """Provider keys set here that no protocol reads (a misspelt provider, or a setting its
        protocol does not declare): ``providers`` maps each provider to its other settings."""
        known = {f"{p}_{k}" for p, extra in providers.items() for k in (*_BASE_KEYS, *extra)}
        return sorted(k for k in self.providers if k not in known)

    @model_validator(mode="before")
    @classmethod
    def _gather_providers(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        own = set(cls.model_fields)
        found = {k: v for k, v in data.items() if k not in own and isinstance(k, str) and _PROVIDER_KEY.fullmatch(k)}
        if not found:
            return data
        given = data.get("providers")
        return {
            **{k: v for k, v in data.items() if k not in found},
            "providers": {**(given if isinstance(given, dict) else {}), **found},
        }

    @field_validator("providers")
    @classmethod
    def _provider_values(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if not _PROVIDER_KEY.fullmatch(key):
                raise ValueError(
                    f"{key!r} is not <provider>_base_url, <provider>_api_key, <provider>_region or <provider>_credentials"
                )
            if key.endswith("_api_key"):
                _header_value(text, key)
        return value

    @field_validator("unjudged_routes")
    @classmethod
    def _unjudged(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            method, _, path = entry.strip().rpartition(" ")
            if not path.startswith("/") or (method and not method.isalpha()):
                raise ValueError(f"{entry!r} is no `[METHOD ]/path` route")
        return entries

    # Checked here, not per request: a value HTTP cannot carry would fail every request (500s
    # for non-Latin-1, 502s for line breaks) instead of failing once, at startup, with its key.
    @field_validator("api_key")
    @classmethod
    def _key_sendable(cls, value: str | None) -> str | None:
        if value is not None:
            _header_value(value)
        return value

    @field_validator("headers")
    @classmethod
    def _headers_sendable(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not _TOKEN.fullmatch(name):
                raise ValueError(f"{name!r} is not a valid header name")
            _header_value(text, name)
        return value


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_BASE_KEYS = ("base_url", "api_key")  # every provider's; a protocol may declare more
# The settings any protocol may declare besides those (``UpstreamSpec.settings``), so that a key
# of this section is told from a misspelt field of its own when the file is read.
_PROVIDER_KEY = re.compile(r"[a-z][a-z0-9]*_(base_url|api_key|region|credentials)")


def _header_value(value: str, name: str = "the value") -> None:
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"{name}: a header value cannot contain line breaks or NUL")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"{name}: a header value must be Latin-1 (ASCII for portability)") from None


class LimitsConfig(_Strict):
    # Long agent histories run to megabytes.
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1, description="larger request bodies get 413")
    body_timeout_s: float = Field(
        30.0,
        gt=0,
        description="a body not received completely by then gets 408 and the connection is closed (slow senders)",
    )
    max_messages: int = Field(
        10_000, ge=1, description="longer histories get 400: judging them would stall every other request"
    )
    history_cache_bytes: int = Field(
        32 * 1024 * 1024,
        ge=0,
        description="bound of each of the two "
        "caches of a conversation's last request (its body's bytes, "
        "its parsed history), so its next request reads and parses "
        "only what is new; per-text memos are bounded at 16 MiB each",
    )
    header_timeout_s: float = Field(
        5.0,
        gt=0,
        description="a connection whose request headers are not "
        "complete by then (from its first byte, or from connecting) gets "
        "408 and is closed (slow-header senders, idle sockets)",
    )
    max_connections: int = Field(
        1000,
        ge=1,
        description="open client connections per process; one "
        "more is answered 503 and closed at once (keep under the file "
        "descriptor limit)",
    )
    max_inflight_bytes: int = Field(
        256 * 1024 * 1024,
        ge=1,
        description="request body bytes held "
        "at once per process; a request that would go beyond gets 503 "
        "with `retry-after` (keep it at least `max_body_bytes`)",
    )


class TenantKey(_Strict):
    """A client key that belongs to a tenant: every key of one tenant shares its namespace
    (sessions, response chains, threads, conversations), so an agent may rotate between them."""

    key: str = Field(description="the key, or `sha256:<hex>` of it")
    tenant: str = Field(min_length=1, description="the tenant's name")


class AuthConfig(_Strict):
    """Client keys the gateway accepts (``Authorization: Bearer`` or ``x-api-key``). Empty: no
    client authentication, every caller may use the upstream key. Entries are keys or
    ``sha256:<hex>`` of keys, so the config need not hold them in clear; an entry
    ``{key: ..., tenant: ...}`` puts the key in a tenant shared with the tenant's other keys."""

    keys: tuple[str | TenantKey, ...] = Field(
        (),
        description="client keys (`${VAR}` and "
        "`sha256:<hex>` entries allowed), sent as "
        "`Authorization: Bearer` or `x-api-key`; never "
        "forwarded; `{key: ..., tenant: name}` entries share "
        "the tenant's namespace. Empty: no client authentication",
    )
    metrics_keys: tuple[str, ...] | None = Field(
        None,
        description="keys for `/metrics`, `/readyz` and the console `/ui`; unset: the same as `auth.keys`; `[]`: open",
    )
    agent_header_keys: tuple[str, ...] | None = Field(
        None, description="keys whose `x-loopguard-agent` may select a policy override; unset: every client's"
    )
    shared_routes: tuple[str, ...] = Field(
        (),
        description="with a server-side upstream key: relayed routes every tenant may use unchecked, "
        "as `[METHOD ]/path` (`{name}`: one segment), each covering the paths below it "
        "(`/v1/files`, `GET /v1/batches`); every tenant then sees every object there "
        "(docs/tenancy.md). Empty: routes that store objects are checked per tenant or refused",
    )

    @field_validator("shared_routes")
    @classmethod
    def _routes(cls, entries: tuple[str, ...]) -> tuple[str, ...]:
        for entry in entries:
            method, _, path = entry.strip().rpartition(" ")
            if not path.startswith("/") or (method and not method.isalpha()):
                raise ValueError(f"{entry!r} is no `[METHOD ]/path` route")
        return entries

    @field_validator("keys", "metrics_keys", "agent_header_keys")
    @classmethod
    def _usable(cls, keys: tuple[str | TenantKey, ...] | None) -> tuple[str | TenantKey, ...] | None:
        for entry in keys or ():
            key = entry.key if isinstance(entry, TenantKey) else entry
            if not key.strip():
                raise ValueError("an empty key (an unset ${VAR}?) would not protect anything")
            if key.startswith("sha256:") and not re.fullmatch(r"[0-9a-fA-F]{64}", key[7:]):
                raise ValueError("a sha256: entry needs 64 hex digits")
        return keys


class LoggingConfig(_Strict):
    format: Literal["json", "console"] = Field("json", description="one JSON line per event, or `console` for people")
    level: Literal["debug", "info", "warning", "error"] = Field("info", description="least severe level logged")


class StateConfig(_Strict):
    """Where sessions' state lives: ``memory`` (one process) or ``redis`` (several replicas)."""

    backend: Literal["memory", "redis"] = Field(
        "memory", description="`memory` (one process) or `redis` (several replicas decide alike)"
    )
    url: str = Field(
        "redis://127.0.0.1:6379/0",
        description="redis: `redis://`, `rediss://` or `unix://`; the password it may carry is never logged",
    )
    # Fleets run Redis sharded (Redis Cluster: ElastiCache/MemoryDB cluster mode, Azure Cache
    # clusters) or as a Sentinel-watched primary and replica; the store follows either.
    mode: Literal["single", "cluster", "sentinel"] = Field(
        "single",
        description="redis: `single` (the node `url` names), `cluster` (Redis Cluster; `url` names "
        "seed nodes, `redis://h1:6379,h2:6379`) or `sentinel` (the primary `sentinels` name as `service`)",
    )
    sentinels: list[str] = Field(
        default_factory=list,
        validate_default=True,
        description="redis, mode `sentinel`: the sentinels, `host:port` each; `url` then gives only "
        "the primary's credentials, database and scheme",
    )
    service: str = Field(
        "", validate_default=True, description="redis, mode `sentinel`: the primary's name the sentinels monitor"
    )
    key_prefix: str = Field("loopguard:", description="redis: prefix of every key")
    ttl_s: float = Field(3600.0, gt=0, description="an idle session is forgotten after this")
    max_sessions: int = Field(
        10_000,
        ge=1,
        description="memory: all tenants' sessions, beyond it the tenant holding the most loses its "
        "least recently used; redis: sessions the mirror keeps. Both: the default `tenant_max_sessions`",
    )
    max_veto_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1,
        description="memory: all sessions' vetoed "
        "exchanges together (each stored with its long strings shortened to "
        "2 KB and a digest); least recently used sessions are evicted beyond this",
    )
    # Budgets per tenant (the namespace every key starts with): one tenant's volume evicts only
    # its own state. The memory store also bounds all tenants together (max_sessions,
    # max_chain_bytes) and then evicts from the tenant holding the most (fair share).
    tenant_max_sessions: int | None = Field(
        None,
        ge=1,
        description="sessions one tenant keeps (its least recently used are evicted beyond it); "
        "unset: `max_sessions`. Memory: all tenants also share `max_sessions` fairly",
    )
    max_chain_bytes: int = Field(
        64 * 1024 * 1024,
        ge=1,
        description="memory: all tenants' response chain records and ownership claims together "
        "(counted as `tenant_max_chain_bytes` counts them); beyond it the tenant holding the most loses its oldest",
    )
    tenant_max_chain_bytes: int | None = Field(
        None,
        ge=1,
        description="response chain records and ownership claims one tenant keeps, counted as "
        "key + serialized value + 256 bytes each (a claim: about 330); its oldest are evicted "
        "beyond it; unset: `max_chain_bytes`",
    )
    local_claims: int = Field(
        100_000,
        ge=1,
        description="redis: ownership claims this process made, remembered to answer for them "
        "while Redis cannot (and to write those it missed once it can)",
    )
    # Most requests find nothing stored but their own previous mark: a per-process copy that
    # Redis keeps true (client-side caching invalidations) answers them without a round trip.
    mirror: bool = Field(
        True,
        description="redis: answer sessions this process knows from its "
        "mirror, kept true by Redis's invalidation messages (Redis >= 6); off: "
        "every request reads Redis",
    )
    # A slow Redis must not slow traffic, so each operation gets this long, and after a failure
    # it is left alone for retry_after_s (requests run on what they carry).
    op_timeout_s: float = Field(0.1, gt=0, le=5, description="redis: each operation's budget")
    retry_after_s: float = Field(
        1.0, ge=0, description="redis: after a failure, requests skip it this long, then it is tried again"
    )
    max_connections: int = Field(64, ge=1, description="redis: pooled connections")

    @field_validator("url")
    @classmethod
    def _scheme(cls, url: str) -> str:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return url

    @field_validator("sentinels")
    @classmethod
    def _sentinels(cls, sentinels: list[str], info: ValidationInfo) -> list[str]:
        for sentinel in sentinels:
            host, _, port = sentinel.rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{sentinel!r} is not host:port")
        if info.data.get("mode") == "sentinel" and not sentinels:
            raise ValueError("mode sentinel needs the sentinels (host:port each)")
        return sentinels

    @field_validator("service")
    @classmethod
    def _service(cls, service: str, info: ValidationInfo) -> str:
        if info.data.get("mode") == "sentinel" and not service:
            raise ValueError("mode sentinel needs the name of the primary the sentinels monitor")
        return service


class SessionsConfig(_Strict):
    """Where a request's session id comes from, first match wins; else a fingerprint of how
    the conversation starts (system prompt, first user message, tool names)."""

    headers: tuple[str, ...] = Field(
        ("x-loopguard-session", "x-session-id"), description="request headers carrying a session id, first match wins"
    )
    body_user: bool = Field(
        True, description="use the body's end user next: `user` (OpenAI), `metadata.user_id` (Anthropic)"
    )
    metadata_key: str | None = Field(
        "session_id", description="then the body's `metadata.<key>`; null: metadata is not used"
    )

    @field_validator("headers")
    @classmethod
    def _lower(cls, headers: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.strip().lower() for h in headers if h.strip())


class WebhookConfig(_Strict):
    """Audit events POSTed as JSON, one per event, from a bounded queue off the request path."""

    url: str = Field(description="`http://` or `https://` URL each event is POSTed to")
    timeout_s: float = Field(5.0, gt=0, description="per POST")
    queue_size: int = Field(1000, ge=1, description="events waiting; beyond it new events are dropped and counted")
    max_retries: int = Field(3, ge=0, le=20, description="retries of network errors, 408, 429 and 5xx")
    backoff_s: float = Field(0.5, gt=0, description="first retry delay, doubled per retry (at most 30 s)")
    headers: dict[str, str] = Field({}, description='e.g. `{Authorization: "Bearer ${AUDIT_TOKEN}"}`')

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url


class AuditConfig(_Strict):
    """Where ``loop_intervention`` events go besides the log (which always gets them)."""

    jsonl_path: str | None = Field(None, description="file each event is appended to as one JSON line")
    webhook: WebhookConfig | None = Field(None, description="POST each event to a URL (keys below); unset: no webhook")


class TelemetryConfig(_Strict):
    """OpenTelemetry traces over OTLP/HTTP; off unless enabled."""

    enabled: bool = Field(
        False,
        description="a span per request (protocol, session hash, action, "
        "detector), the upstream call as its child, `traceparent` sent upstream",
    )
    endpoint: str = Field("http://127.0.0.1:4318/v1/traces", description="OTLP/HTTP traces URL of a collector")
    service_name: str = Field("loopguard", description="`service.name` of the spans")
    headers: dict[str, str] = Field({}, description="sent with each export, e.g. a collector's API key")


class UiConfig(_Strict):
    """The operator console at ``/ui``: recent interventions, each run's timeline, totals, the
    policy in effect. Behind ``auth.metrics_keys`` (an operator's key); with tenants in
    ``auth.keys`` and no ``metrics_keys``, closed to client keys unless ``tenant_view``."""

    enabled: bool = Field(True, description="serve the operator console at `/ui` (operator keys: `auth.metrics_keys`)")
    tenant_view: bool = Field(
        False,
        description="a client key (`auth.keys`) opens the console too, showing only its tenant's "
        "runs (or its own key's, for a key without a tenant); off: operator keys only",
    )
    max_events: int = Field(
        1000,
        ge=10,
        le=100_000,
        description="recent events kept in the state store (redis: a stream shared by replicas, trimmed to this)",
    )
    max_run_bytes: int = Field(
        16384,
        ge=2048,
        le=1_048_576,
        description="bound of the timeline "
        "kept with each event (excerpts of calls and results, secrets "
        "masked); the newest calls are kept",
    )


class ModelPrice(_Strict):
    """One model's price for savings, in USD per million tokens (as providers list them)."""

    input_usd_per_mtok: float = Field(ge=0, description="USD per million input tokens")
    output_usd_per_mtok: float = Field(ge=0, description="USD per million output tokens")
    tokenizer: Literal["cl100k_base", "o200k_base", "p50k_base"] | None = Field(
        None,
        description="tiktoken encoding to count this model's tokens with; unset: tiktoken's "
        "for OpenAI models, else characters / 4 (flagged as estimated)",
    )


class StreamingConfig(_Strict):
    """How streamed replies are read; the client gets the same bytes either way."""

    fast_paths: bool = Field(
        True,
        description="read chat streams' bytes without decoding every "
        "event where that is safe (whole reads relayed as they came, argument "
        "deltas matched by their bytes, a whole round judged in one pass); "
        "`false`: every event is decoded and read one way, slower",
    )
    keepalive_s: float = Field(
        15.0,
        gt=0,
        description="while the gateway holds part of a stream (a "
        "tool call until judged, a required-tool answer until known), an SSE "
        "keepalive comment goes out after this many quiet seconds, so "
        "idle-timeout proxies keep the connection",
    )


class FleetConfig(_Strict):
    """The fleet view (docs/fleet.md): a remote tool (MCP, fetch, an application's API; never the
    agent's own shell or files) failing alike in many sessions of a tenant is down, and its agents
    are told; a new run repeating the loop an earlier run of the same agent was stopped for is warned."""

    enabled: bool = Field(True, description="follow remote tools' health across sessions; false: the fleet view is off")
    sessions: int = Field(
        3, ge=2, le=1000, description="a tool is down once this many sessions of a tenant saw it fail with one error"
    )
    window_minutes: float = Field(
        10.0,
        gt=0,
        le=1440,
        description="... within this many minutes; it is up again after a success or this long of silence",
    )
    action: Literal["reject", "warn", "none"] = Field(
        "reject",
        description="an agent whose call to a down tool failed: `reject` (told at once, its next "
        "retry refused), `warn` (told only), `none` (only audit, metrics and console)",
    )
    recall: bool = Field(
        True, description="warn a new run that repeats the loop an earlier run of the same agent was stopped for"
    )
    recall_minutes: float = Field(30.0, gt=0, le=1440, description="how long a stopped loop is remembered")
    tenant_max_tools: int = Field(
        256, ge=1, description="tool/error entries one tenant keeps (its least recently failing evicted beyond it)"
    )
    tenant_max_agents: int = Field(
        256, ge=1, description="agents whose stopped loops one tenant keeps (its least recent evicted beyond it)"
    )
    metrics_tools: int = Field(
        20,
        ge=1,
        le=1000,
        description="tools with a series of their own in `loopguard_tool_failures`; the rest are `other`",
    )


class Config(_Strict):
    server: ServerConfig = ServerConfig()
    upstream: UpstreamConfig = UpstreamConfig()
    policy: str | None = Field(
        None,
        description="policy YAML (relative to the config file) or "
        "a shipped pack's name (`default`, `strict`, `shadow`, ...); "
        "unset: `default`",
    )
    limits: LimitsConfig = LimitsConfig()
    auth: AuthConfig = AuthConfig()
    logging: LoggingConfig = LoggingConfig()
    state: StateConfig = StateConfig()
    sessions: SessionsConfig = SessionsConfig()
    audit: AuditConfig = AuditConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    streaming: StreamingConfig = StreamingConfig()
    ui: UiConfig = UiConfig()
    fleet: FleetConfig = FleetConfig()
    pricing: dict[str, ModelPrice] = Field(
        {},
        description="savings prices by model name (as "
        "clients send it), e.g. `{my-llama: {input_usd_per_mtok: "
        "0.2, output_usd_per_mtok: 0.6}}`; they come before "
        "litellm's bundled list prices",
    )


Problems = list[tuple[str, str]]  # (dotted key path, reason)


def interpolate(value: Any, env: dict[str, str], problems: Problems | None = None, path: str = "") -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string of a YAML tree.

    A ``${VAR}`` without a default whose variable is unset is a problem at its key path (an
    empty value would quietly change behaviour, e.g. an unset ``upstream.api_key`` forwards the
    client's key); a set-but-empty variable is taken as it is, and ``${VAR:-}`` allows unset.
    """
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if default is not None:
                return env.get(name) or default
            if name not in env and problems is not None:
                problems.append(
                    (path, f"environment variable {name} is not set (write ${{{name}:-}} to allow it to be unset)")
                )
            return env.get(name, "")

        return _ENV_REF.sub(substitute, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env, problems, _join(path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env, problems, _join(path, i)) for i, v in enumerate(value)]
    return value


def _join(path: str, key: object) -> str:
    return f"{path}.{key}" if path else str(key)


def load_config(path: str | os.PathLike[str] | None, env: dict[str, str] | None = None) -> Config:
    """Load ``path`` (or defaults when None) and apply environment overrides. Every problem of
    the file is reported at once, in one :class:`ConfigError`."""
    env = dict(os.environ) if env is None else env
    raw: dict[str, Any] = {}
    file = str(path) if path else "<defaults>"
    if path:
        raw = _read_yaml(Path(path))
    problems: Problems = []
    raw = interpolate(raw, env, problems)
    # The other providers' ``LOOPGUARD_<PROVIDER>_BASE_URL`` are read when their upstreams are
    # built (``UpstreamConfig.provider``): which providers exist is the protocols' to say.
    if value := env.get("LOOPGUARD_UPSTREAM_BASE_URL"):
        raw.setdefault("upstream", {})
        if isinstance(raw["upstream"], dict):
            raw["upstream"]["base_url"] = value
            problems[:] = [p for p in problems if p[0] != "upstream.base_url"]  # overridden
    if isinstance(raw.get("policy"), str) and all(where != "policy" for where, _ in problems):
        raw["policy"] = _policy_path(raw["policy"], Path(path).parent if path else None, problems)
    config = _validate(raw, problems)
    if problems or config is None:
        (first_path, first_reason), *more = problems
        raise ConfigError(file, first_path, first_reason, tuple(more))
    return config


def _validate(raw: dict[str, Any], problems: Problems) -> Config | None:
    try:
        return Config.model_validate(raw)
    except ValidationError as exc:
        reported = {where for where, _ in problems}  # an unset variable's key fails again: once
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"])
            if where not in reported:
                problems.append((where, err["msg"]))
        return None


def _policy_path(ref: str, base: Path | None, problems: Problems) -> str:
    """``policy:`` is a file (relative to the config file, not to the working directory) or
    the name of a shipped pack, the same rule as ``loopguard replay --policy``."""
    from gateway.policy.loader import policy_path, shipped_policy_names

    try:
        return str(policy_path(ref, base))
    except (ValueError, FileNotFoundError):
        packs = ", ".join(shipped_policy_names())
        problems.append(("policy", f"{ref!r} is neither a file nor a shipped pack ({packs})"))
        return ref


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(str(path), "", f"cannot read: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark else ""
        raise ConfigError(str(path), "", f"{where}invalid YAML: {getattr(exc, 'problem', exc)}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(str(path), "", "the top level must be a mapping")
    return data
