"""Parsed YAML to a compiled Policy: validate, merge agents entries, precompute everything.

Agents entries are deep-merged over the global block field by field (nested mappings merge key
by key, lists and scalars replace), as OpenClaw does. Parts an entry does not touch are
shared with the global block (same objects), so an entry costs only what it changes.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError
from structlog import get_logger as _log

from gateway.agents.catalog import Catalog, ProfileError, load_profile
from gateway.agents.profile import AgentProfile
from gateway.detectors.base import DetectorSettings
from gateway.policy.actions import Action
from gateway.policy.engine import Registry, blocking, build_plan
from gateway.policy.messages import compile_messages
from gateway.policy.model import AgentRule, EffectivePolicy, Policy
from gateway.policy.schema import (
    BODY_KEYS,
    AgentMatch,
    Body,
    PolicyError,
    PolicyFile,
    error_from,
)
from gateway.policy.schema import (
    join_path as join,
)
from gateway.policy.strict_yaml import read_yaml, shipped_profiles
from gateway.policy.thresholds import fix_order, warn_unreachable, written_problems
from gateway.trace.settings import TraceSettings

M = TypeVar("M", bound=BaseModel)
_RETRIED = {408, 409, 429}  # statuses the openai SDK retries on its own
_CONTAINERS = frozenset({"exempt_tools", "normalize", "detectors", "interventions", "messages", "agents"})


@dataclass(frozen=True)
class _Ctx:
    file: str
    name: str
    registry: Registry
    prefix: str = ""  # key path of the block being compiled: "" or "agents[2]"
    agent: str | None = None
    allow_reorder: bool = False
    profiles: tuple[AgentProfile, ...] = ()


def compile_policy(raw: Any, file: str, registry: Registry) -> Policy:
    if not isinstance(raw, dict):
        raise PolicyError(file, "", f"a policy is a YAML mapping of keys, not {type(raw).__name__}")
    raw = _without_empty(raw)
    if isinstance(raw.get("agents"), list):
        raw["agents"] = [_without_empty(e) if isinstance(e, dict) else e for e in raw["agents"]]
    doc = _validate(PolicyFile, raw, _Ctx(file, "", registry))
    ctx = _Ctx(
        file,
        doc.name or Path(file).stem,
        registry,
        allow_reorder=doc.allow_reorder,
        profiles=_profiles(doc.profiles, file),
    )
    base_raw = _shorthand(_body(raw))
    default = _effective(base_raw, None, None, ctx)  # nothing to merge entries over without it
    rules: list[AgentRule] = []
    problems: list[tuple[str, str]] = []
    for i, (entry, parsed) in enumerate(zip(raw.get("agents") or [], doc.agents)):
        label = parsed.id or f"agents[{i}]"
        override = _shorthand(_body(entry))
        agent_ctx = _Ctx(file, ctx.name, registry, f"agents[{i}]", label, doc.allow_reorder, ctx.profiles)
        try:  # every entry's problems are reported at once, not only the first entry's
            policy = _effective(deep_merge(base_raw, override), override, default, agent_ctx)
        except PolicyError as exc:
            problems += exc.problems
            continue
        rules.append(_rule(parsed.match, label, policy))
    if problems:
        (path, reason), *more = problems
        raise PolicyError(file, path, reason, more=tuple(more))
    return Policy(ctx.name, file, default, tuple(rules))


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _effective(
    merged: dict[str, Any], override: dict[str, Any] | None, inherited: EffectivePolicy | None, ctx: _Ctx
) -> EffectivePolicy:
    body = _validate(Body, merged, ctx)

    def own(*keys: str) -> bool:  # does this entry set any of ``keys`` itself? (the default block sets all)
        return any(k in (override or {}) for k in keys)

    touched = set((override or {}).get("detectors") or {})
    written = (override if override is not None else merged).get("detectors")
    settings = _detectors(body.detectors, touched, inherited, ctx, written if isinstance(written, dict) else {})
    horizon = max((getattr(s, "window", 0) for s in settings.values() if s.enabled), default=0)
    if inherited is None or own("scope", "normalize") or inherited.trace_settings.horizon < horizon:
        trace = _trace_settings(body, horizon, ctx)
    else:  # shared: the trace builder's memo lives on the TraceSettings instance
        trace = inherited.trace_settings
    if inherited is None or own("messages"):
        messages = compile_messages(body.messages.language, body.messages.model_dump())
    else:
        messages = inherited.messages
    if (inherited is None or own("interventions")) and body.interventions.terminate.status in _RETRIED:
        _log(__name__).warning(
            "policy.terminate_status_retried",
            file=ctx.file,
            agent=ctx.agent,
            status=body.interventions.terminate.status,
            hint="clients retry this status; 422 ends the loop",
        )
    # The master switch filters, it does not rewrite: detector_settings still show what is set.
    enabled = {} if body.enabled is False else {name: s for name, s in settings.items() if s.enabled}
    return EffectivePolicy(
        name=ctx.name,
        source=ctx.file,
        agent=ctx.agent,
        mode=body.mode,
        max_action=Action.parse(body.max_action),
        exempt_tools=body.exempt_tools,
        trace_settings=trace,
        interventions=body.interventions,
        messages=messages,
        detector_settings=MappingProxyType(settings),
        detectors=MappingProxyType(enabled),
        plan=(plan := build_plan(enabled, body.exempt_tools, ctx.registry)),
        blocking_plan=blocking(plan),
        catalog=_catalog(body.profile, ctx),
    )


def _catalog(choice: str, ctx: _Ctx) -> Catalog:
    try:
        return Catalog(ctx.profiles, choice)
    except ValueError as exc:
        raise PolicyError(ctx.file, join(ctx.prefix, "profile"), str(exc)) from None


def _profiles(entries: list[dict[str, Any] | str], file: str) -> tuple[AgentProfile, ...]:
    """The policy's own profiles, then the shipped ones it does not replace by name."""
    own = []
    for i, entry in enumerate(entries):
        where = f"profiles[{i}]"
        try:
            if isinstance(entry, str):
                path = Path(file).parent / entry
                raw = read_yaml(path.read_text(encoding="utf-8"), str(path))
                own.append(load_profile(raw, str(path)))
            else:
                own.append(load_profile(entry, where))
        except (OSError, UnicodeDecodeError, ProfileError) as exc:
            raise PolicyError(file, where, str(exc)) from None
    names = {p.name for p in own}
    return (*own, *(p for p in shipped_profiles() if p.name not in names))


def _detectors(
    blocks: dict[str, Any], touched: set[str], inherited: EffectivePolicy | None, ctx: _Ctx, written: dict[str, Any]
) -> dict[str, DetectorSettings]:
    """Each detector's settings; the problems of all detectors are raised together."""
    for name, block in blocks.items():
        if name not in ctx.registry:
            raise PolicyError(
                ctx.file, join(ctx.prefix, f"detectors.{name}"), f"unknown detector (known: {', '.join(ctx.registry)})"
            )
        if not isinstance(block, dict):
            raise PolicyError(
                ctx.file, join(ctx.prefix, f"detectors.{name}"), "expected a mapping of settings, or true/false"
            )
    out: dict[str, DetectorSettings] = {}
    problems: list[tuple[str, str]] = []
    for name, detector in ctx.registry.items():
        if inherited is not None and name not in touched:
            out[name] = inherited.detector_settings[name]  # already validated and ordered
            continue
        path = join(ctx.prefix, f"detectors.{name}")
        try:
            settings = _validate(detector.settings, blocks.get(name, {}), ctx, path)
        except PolicyError as exc:
            problems += exc.problems
            continue
        problems += written_problems(written.get(name), detector.settings, path, ctx.allow_reorder)
        out[name] = fix_order(settings, file=ctx.file, detector=name, agent=ctx.agent)
        warn_unreachable(out[name], file=ctx.file, detector=name, agent=ctx.agent)
    if problems:
        (path, reason), *more = problems
        raise PolicyError(ctx.file, path, reason, more=tuple(more))
    return out


def _trace_settings(body: Body, horizon: int, ctx: _Ctx) -> TraceSettings:
    """Scope + normalize; the horizon (events materialized per request) is raised to the widest
    enabled detector window, else that detector would silently see less than configured."""
    path = join(ctx.prefix, "normalize")
    if "scope" in body.normalize:
        raise PolicyError(ctx.file, f"{path}.scope", "set scope at the top level of the block")
    data = {**body.normalize, "scope": body.scope}
    try:
        trace = _validate(TraceSettings, data, ctx, path)
        if trace.horizon >= horizon:
            return trace
        if "horizon" in body.normalize:
            _log(__name__).warning(
                "policy.horizon_raised",
                file=ctx.file,
                agent=ctx.agent,
                old=trace.horizon,
                new=horizon,
                reason="largest detector window",
            )
        return _validate(TraceSettings, {**data, "horizon": horizon}, ctx, path)
    except re.error as exc:  # each compiles alone but not joined, e.g. duplicate group names
        raise PolicyError(ctx.file, path, f"patterns cannot be combined: {exc}") from None


def _rule(match: AgentMatch, label: str, policy: EffectivePolicy) -> AgentRule:
    def glob(pattern: str | None) -> re.Pattern[str] | None:
        return re.compile(fnmatch.translate(pattern)) if pattern is not None else None

    key = match.api_key_sha256.lower() if match.api_key_sha256 else None
    return AgentRule(label, match.header, key, glob(match.model), glob(match.path), policy)


def _validate(model: type[M], raw: Any, ctx: _Ctx, path: str | None = None) -> M:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise error_from(exc, ctx.file, ctx.prefix if path is None else path) from None


def _without_empty(block: dict[str, Any]) -> dict[str, Any]:
    """``agents:`` or ``detectors:`` with every entry commented out is YAML null: read it as
    "nothing set here" (an ops habit), not as a type error or as "replace with nothing"."""
    return {k: v for k, v in block.items() if not (v is None and k in _CONTAINERS)}


def _body(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k in BODY_KEYS}


def _shorthand(body: dict[str, Any]) -> dict[str, Any]:
    """``detectors: {cycle: false}`` means ``{cycle: {enabled: false}}`` (OpenClaw's switches);
    an empty ``cycle:`` means its defaults. Done before merging so switches merge field-wise."""
    blocks = body.get("detectors")
    if not isinstance(blocks, dict):
        return body
    fixed = {n: {"enabled": b} if isinstance(b, bool) else ({} if b is None else b) for n, b in blocks.items()}
    return {**body, "detectors": fixed}
