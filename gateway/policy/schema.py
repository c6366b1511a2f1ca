"""The policy file's shape, and the one error every validation problem becomes.

These models check structure and types of a policy YAML. Two blocks are typed loosely here and
validated by the loader against what they configure: ``detectors.<name>`` against that detector's
own Settings class from the registry (so a new detector needs no change here), and ``normalize``
against :class:`gateway.trace.settings.TraceSettings`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.policy.actions import REJECT_MARKER
from gateway.policy.messages import check_template
from gateway.trace.model import OWN_TEXT_MARKER

Mode = Literal["enforce", "shadow"]
Level = Literal["warn", "reject", "terminate"]
Scope = Literal["run", "conversation"]
Placement = Literal["system", "tool_result", "user"]


class PolicyError(ValueError):
    """A policy that cannot be used. ``str()`` is ``"<file>: <key.path>: <reason>"``, one line per
    problem, so an operator can go straight to the offending key."""

    def __init__(
        self, file: str, path: str, reason: str, *, line: int | None = None, more: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.file, self.path, self.reason, self.line = file, path, reason, line
        self.problems: tuple[tuple[str, str], ...] = ((path, reason), *more)
        super().__init__("\n".join(self._line(p, r) for p, r in self.problems))

    def _line(self, path: str, reason: str) -> str:
        where = path or (f"line {self.line}" if self.line else "")
        return f"{self.file}: {where}: {reason}" if where else f"{self.file}: {reason}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class WarnIntervention(_Model):
    placement: Placement = "system"  # where the anchor message goes; "system" disturbs least


class RejectIntervention(_Model):
    max_reasks: StrictInt = Field(2, ge=0, le=10)  # at most 2 corrective retries


class TerminateIntervention(_Model):
    # answer: the model writes the final reply itself, tools closed; reply: the template; error.
    mode: Literal["answer", "reply", "error"] = "answer"
    # How long the model may take to write that answer before the template replaces it.
    answer_timeout_s: float = Field(20.0, gt=0, le=600)
    # 422, not 409: the openai SDK (and others) retry 408/409/429/5xx automatically, and a retried
    # terminate is just another identical terminate. 422 maps to UnprocessableEntityError.
    status: StrictInt = Field(422, ge=400, le=499)


class Interventions(_Model):
    warn: WarnIntervention = WarnIntervention()
    reject: RejectIntervention = RejectIntervention()
    terminate: TerminateIntervention = TerminateIntervention()


class MessagesConfig(_Model):
    language: Literal["en", "zh"] = "en"
    warn: str | None = None  # None: the language's shipped template
    reject: str | None = None
    reask: str | None = None
    terminate: str | None = None
    answer: str | None = None  # the note asking for a final answer with tools closed

    @field_validator("warn", "reject", "reask", "terminate", "answer")
    @classmethod
    def _placeholders(cls, text: str | None) -> str | None:
        if text is not None:
            check_template(text)  # raises ValueError naming the bad placeholder
        return text

    @field_validator("warn", "reask", "answer")
    @classmethod
    def _own_text_marker(cls, text: str | None) -> str | None:
        # These texts enter the conversation (appended to a tool result, as a user message):
        # the trace builder removes them by their opening marker, so they never make a repeated
        # call look new nor pass for the user's own words.
        if text is not None and not text.lower().startswith(OWN_TEXT_MARKER):
            raise ValueError(
                "must start with '[LoopGuard' (any case): the trace builder recognises the gateway's own text by it"
            )
        return text

    @field_validator("reject")
    @classmethod
    def _marker(cls, text: str | None) -> str | None:
        if text is not None and not text.startswith(REJECT_MARKER):
            raise ValueError(f"must start with {REJECT_MARKER!r}: the trace builder recognises vetoed calls by it")
        return text


class AgentMatch(_Model):
    """All given criteria must match (AND). Globs use fnmatch syntax, case-sensitive."""

    header: str | None = None  # exact value of the x-loopguard-agent request header
    api_key_sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    model: str | None = None  # glob on the request's "model"
    path: str | None = None  # glob on the request path, e.g. "/v1/chat/completions"

    @model_validator(mode="after")
    def _not_empty(self) -> AgentMatch:
        if not any((self.header, self.api_key_sha256, self.model, self.path)):
            raise ValueError(
                "needs at least one of header, api_key_sha256, model, path "
                "(an empty match would silently apply to every request)"
            )
        return self


class Body(_Model):
    """What both the global block and an ``agents`` entry may set."""

    # Master switch (OpenClaw's loopDetection.enabled): false turns every detector off,
    # post_compaction included; unset or true leaves the detectors as configured, so the
    # post-compaction guard stays on even where every other detector is switched off.
    enabled: StrictBool | None = None
    mode: Mode = "enforce"
    max_action: Level = "terminate"
    scope: Scope = "run"
    exempt_tools: frozenset[str] = frozenset()
    normalize: dict[str, Any] = Field(default_factory=dict)  # checked against TraceSettings
    detectors: dict[str, Any] = Field(default_factory=dict)  # checked against the registry
    interventions: Interventions = Interventions()
    messages: MessagesConfig = MessagesConfig()
    # Which agent profile reads the traces (gateway/agents): "auto" recognises the agent from
    # each request, "none" keeps the generic reading, a profile's name forces that profile.
    profile: str = Field("auto", pattern=r"^[a-z0-9_]+$")


BODY_KEYS: frozenset[str] = frozenset(Body.model_fields)


class AgentEntry(Body):
    id: str | None = None  # a label for logs and audit events; not used for matching
    match: AgentMatch


class PolicyFile(Body):
    version: Literal[1]  # required, so a future format change can be detected, not guessed
    name: str | None = None  # defaults to the file's stem
    description: str | None = None
    # Out-of-order thresholds are raised above the previous one (logged) instead of refused.
    allow_reorder: StrictBool = False
    agents: list[AgentEntry] = Field(default_factory=list)
    # More agent profiles, before the shipped ones (a same-named one replaces the shipped):
    # each a mapping in the profile format, or the path of a profile YAML file relative to
    # this policy file.
    profiles: list[dict[str, Any] | str] = Field(default_factory=list)


def key_path(loc: tuple[str | int, ...]) -> str:
    """``("agents", 0, "detectors", "x")`` -> ``"agents[0].detectors.x"``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def error_from(exc: ValidationError, file: str, prefix: str = "") -> PolicyError:
    """Turn pydantic's errors into one PolicyError naming the file and each key path."""
    problems = []
    for err in exc.errors():
        path = key_path(tuple(err["loc"]))
        reason = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            reason = "unknown key"
        problems.append((join_path(prefix, path), reason))
    (first_path, first_reason), *more = problems
    return PolicyError(file, first_path, first_reason, more=tuple(more))


def join_path(prefix: str, path: str) -> str:
    """``("agents[0]", "mode")`` -> ``"agents[0].mode"``; either part may be empty."""
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"
