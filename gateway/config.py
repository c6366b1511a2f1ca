"""Gateway configuration: YAML with ``${VAR}`` / ``${VAR:-default}`` interpolation, strict schema.

Every error names the file and the key path, because operators edit this file by hand and the
first thing they need to know is where the mistake is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """An invalid configuration file: ``file``, dotted ``path`` of the key, ``reason``."""

    def __init__(self, file: str, path: str, reason: str) -> None:
        self.file, self.path, self.reason = file, path, reason
        super().__init__(f"{file}: {path}: {reason}" if path else f"{file}: {reason}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerConfig(_Strict):
    host: str = "127.0.0.1"
    port: int = Field(8080, ge=0, le=65535)


class UpstreamConfig(_Strict):
    base_url: str = "https://api.openai.com/v1"
    # A server-side key replaces the client's Authorization; without it the client's is forwarded.
    api_key: str | None = None
    timeout_s: float = Field(600.0, gt=0)  # LLM calls can legitimately take minutes
    connect_timeout_s: float = Field(10.0, gt=0)
    headers: dict[str, str] = {}
    max_connections: int = Field(512, ge=1)

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


def _header_value(value: str, name: str = "the value") -> None:
    if any(c in value for c in "\r\n\0"):
        raise ValueError(f"{name}: a header value cannot contain line breaks or NUL")
    try:
        value.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError(f"{name}: a header value must be Latin-1 (ASCII for portability)") from None


class LimitsConfig(_Strict):
    max_body_bytes: int = Field(32 * 1024 * 1024, ge=1)  # long agent histories run to megabytes


class LoggingConfig(_Strict):
    format: Literal["json", "console"] = "json"
    level: Literal["debug", "info", "warning", "error"] = "info"


class StateConfig(_Strict):
    """Where sessions' state lives: ``memory`` (one process) or ``redis`` (several replicas)."""

    backend: Literal["memory", "redis"] = "memory"
    url: str = "redis://127.0.0.1:6379/0"  # redis:// rediss:// or unix://; may carry a password
    key_prefix: str = "loopguard:"
    ttl_s: float = Field(3600.0, gt=0)  # an idle session is forgotten after this
    max_sessions: int = Field(10_000, ge=1)  # memory backend: LRU bound
    # Redis only: a slow Redis must not slow traffic, so each operation gets this long, and
    # after a failure it is left alone for retry_after_s (requests run on what they carry).
    op_timeout_s: float = Field(0.1, gt=0, le=5)
    retry_after_s: float = Field(1.0, ge=0)
    max_connections: int = Field(64, ge=1)

    @field_validator("url")
    @classmethod
    def _scheme(cls, url: str) -> str:
        if not url.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return url


class SessionsConfig(_Strict):
    """Where a request's session id comes from, first match wins; else a fingerprint of how
    the conversation starts (system prompt, first user message, tool names)."""

    headers: tuple[str, ...] = ("x-loopguard-session", "x-session-id")
    body_user: bool = True  # the body's ``user`` field
    metadata_key: str | None = "session_id"  # ``metadata.<key>`` of the body; null: not used

    @field_validator("headers")
    @classmethod
    def _lower(cls, headers: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(h.strip().lower() for h in headers if h.strip())


class WebhookConfig(_Strict):
    """Audit events POSTed as JSON, one per event, from a bounded queue off the request path."""

    url: str
    timeout_s: float = Field(5.0, gt=0)
    queue_size: int = Field(1000, ge=1)  # events waiting; beyond it new events are dropped, counted
    max_retries: int = Field(3, ge=0, le=20)  # network errors, 408/429 and 5xx are retried
    backoff_s: float = Field(0.5, gt=0)  # first retry delay, doubled per retry (at most 30 s)
    headers: dict[str, str] = {}  # e.g. {Authorization: "Bearer ${AUDIT_TOKEN}"}

    @field_validator("url")
    @classmethod
    def _http(cls, url: str) -> str:
        if not url.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return url


class AuditConfig(_Strict):
    """Where ``loop_intervention`` events go besides the log (which always gets them)."""

    jsonl_path: str | None = None  # one JSON line per event, appended
    webhook: WebhookConfig | None = None


class Config(_Strict):
    server: ServerConfig = ServerConfig()
    upstream: UpstreamConfig = UpstreamConfig()
    policy: str | None = None  # path of a policy YAML; None = the shipped default pack
    limits: LimitsConfig = LimitsConfig()
    logging: LoggingConfig = LoggingConfig()
    state: StateConfig = StateConfig()
    sessions: SessionsConfig = SessionsConfig()
    audit: AuditConfig = AuditConfig()


def interpolate(value: Any, env: dict[str, str]) -> Any:
    """Replace ``${VAR}`` and ``${VAR:-default}`` in every string of a YAML tree."""
    if isinstance(value, str):
        return _ENV_REF.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), value)
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    return value


def load_config(path: str | os.PathLike[str] | None, env: dict[str, str] | None = None) -> Config:
    """Load ``path`` (or defaults when None) and apply environment overrides."""
    env = dict(os.environ) if env is None else env
    raw: dict[str, Any] = {}
    file = str(path) if path else "<defaults>"
    if path:
        raw = _read_yaml(Path(path))
    raw = interpolate(raw, env)
    if base_url := env.get("LOOPGUARD_UPSTREAM_BASE_URL"):
        raw.setdefault("upstream", {})
        if isinstance(raw["upstream"], dict):
            raw["upstream"]["base_url"] = base_url
    try:
        config = Config.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(file, ".".join(str(p) for p in err["loc"]), err["msg"]) from exc
    if path and config.policy:
        # Relative policy paths are relative to the config file, not to the working directory.
        policy = Path(config.policy)
        if not policy.is_absolute():
            config = config.model_copy(update={"policy": str(Path(path).parent / policy)})
    return config


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
