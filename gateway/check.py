"""``loopguard check``: validate a config file (and the policy it points to) or a policy file,
and show the effective policy per agent after merging, the way the gateway will run it."""

from __future__ import annotations

import enum
import json
import re
import sys
from pathlib import Path
from typing import IO, Any

import yaml

from gateway.config import Config, ConfigError, load_config
from gateway.policy.loader import load_policy, shipped_policy_path
from gateway.policy.model import EffectivePolicy, Policy
from gateway.policy.schema import PolicyError, PolicyFile
from gateway.policy.strict_yaml import read_yaml


def run_check(path: str, fmt: str = "yaml", out: IO[str] = sys.stdout, err: IO[str] = sys.stderr) -> int:
    try:
        config_file, policy = load_any(path)
    except ConfigError as exc:
        print(f"loopguard: invalid config: {exc}", file=err)
        return 1
    except PolicyError as exc:
        hint = " (a policy file starts with `version: 1`)" if "version" in (p for p, _ in exc.problems) else ""
        print(f"loopguard: invalid policy: {exc}{hint}", file=err)
        return 1
    doc = describe(policy)
    print(
        json.dumps(doc, indent=2, ensure_ascii=False)
        if fmt == "json"
        else yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100),
        file=out,
        end="" if fmt != "json" else "\n",
    )
    what = f"config {config_file} -> policy {policy.source}" if config_file else f"policy {policy.source}"
    print(f"ok: {what} ({len(policy.rules)} agents entries)", file=err)
    return 0


def load_any(path: str) -> tuple[str | None, Policy]:
    """(config file or None, the compiled policy). A YAML mapping with ``version`` is a policy;
    anything else is read as a gateway config."""
    if _looks_like_policy(Path(path)):
        return None, load_policy(path)
    config = load_config(path)
    return path, load_policy(config.policy or shipped_policy_path())


def describe(policy: Policy) -> dict[str, Any]:
    matches = raw_matches(policy.source)
    blocks = [_effective(policy.default, None)]
    blocks += [_effective(rule.policy, matches[i] if i < len(matches) else None) for i, rule in enumerate(policy.rules)]
    return {"policy": policy.name, "file": policy.source, "agents": blocks}


def _effective(eff: EffectivePolicy, match: Any) -> dict[str, Any]:
    trace = eff.trace_settings.model_dump()
    block: dict[str, Any] = plain(  # plain() keeps a dict a dict
        {
            "agent": eff.agent or "(default)",
            "match": match,
            "mode": eff.mode,
            "max_action": eff.max_action.label,
            "scope": trace.pop("scope"),
            "exempt_tools": eff.exempt_tools,
            "detectors": {name: s.model_dump() for name, s in eff.detector_settings.items()},
            "interventions": eff.interventions.model_dump(),
            "messages": {
                "language": eff.messages.language,
                **{kind: t.source for kind, t in eff.messages.templates.items()},
            },
            "normalize": trace,
        }
    )
    return block


def plain(value: Any) -> Any:
    """YAML/JSON-ready and deterministic: sets sorted, tuples listed, patterns as their text."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(plain(v) for v in value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, re.Pattern):
        return value.pattern
    if isinstance(value, enum.Enum):
        return value.value
    return value


def _looks_like_policy(path: Path) -> bool:
    """A mapping with ``version``, or whose keys are a policy's and none a config's: a policy
    that forgot its ``version`` is reported as a policy missing it, not as a config with
    unknown keys."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return False  # let the config loader report it, with the file and line
    if not isinstance(data, dict):
        return False
    keys = set(data)
    return "version" in keys or (not keys & set(Config.model_fields) and bool(keys & set(PolicyFile.model_fields)))


def raw_matches(source: str) -> list[Any]:
    """The agents entries' ``match`` blocks as written (globs, not their compiled regexes)."""
    try:
        raw = read_yaml(Path(source).read_text(encoding="utf-8"), source)
    except (OSError, PolicyError):
        return []
    agents = raw.get("agents") if isinstance(raw, dict) else None
    return [a.get("match") if isinstance(a, dict) else None for a in agents or []]
