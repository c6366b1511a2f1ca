"""The profiles a policy knows, recognition of one from a request, and the trace settings each
profile makes of the policy's own.

Recognition reads the request alone: its declared tool names, its system prompt, its User-Agent.
A named User-Agent or system prompt marker is the surest sign, so such a match wins over a match
by tools; among matches by tools (an overlap: a share of the profile's marking tools, so versions
that add or drop tools still match) the one with more of them declared wins (a fork declares its
parent's tools and some of its own). Unknown clients get no profile and keep the generic reading.

Everything here is computed once per (policy, profile) and per distinct request shape: the hot
path pays one dictionary look-up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gateway.agents.profile import AgentProfile, multiline
from gateway.trace.model import Conversation
from gateway.trace.settings import TraceSettings

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"
AUTO = "auto"  # recognise the agent from each request (the default)
GENERIC = "none"  # no profile: the generic reading
_SYSTEM_CHARS = 16384  # agents state who they are at the start of their system prompt
_MAX_SHAPES = 1024  # distinct request shapes remembered: agents x tool sets, not requests


class ProfileError(ValueError):
    """A profile that cannot be used: ``str()`` names the file and the key path."""


def load_profile(raw: Any, file: str) -> AgentProfile:
    try:
        return AgentProfile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ProfileError(f"{file}: {problems}") from None


def read_profiles(read: Callable[[str, str], Any], directory: Path = PROFILES_DIR) -> tuple[AgentProfile, ...]:
    """Every ``*.yaml`` profile in ``directory``, in name order; ``read(text, file)`` parses
    YAML (the policy loader's strict reader: a duplicated key is an error)."""
    out = []
    for path in sorted(directory.glob("*.yaml")):
        out.append(load_profile(read(path.read_text(encoding="utf-8"), str(path)), str(path)))
    names = [p.name for p in out]
    duplicated = {n for n in names if names.count(n) > 1}
    if duplicated:
        raise ProfileError(f"{directory}: profile names used twice: {', '.join(sorted(duplicated))}")
    return tuple(out)


class Catalog:
    """Profiles in order (a policy's own before the shipped ones, replacing a shipped profile of
    the same name), and the choice a policy block made: ``auto``, ``none`` or a profile name."""

    def __init__(self, profiles: tuple[AgentProfile, ...], choice: str = AUTO) -> None:
        self.profiles = profiles
        self.by_name = {p.name: p for p in profiles}
        if choice not in (AUTO, GENERIC) and choice not in self.by_name:
            raise ValueError(f"unknown profile {choice!r} (known: {', '.join(self.by_name) or 'none'})")
        self.choice = choice
        self._shapes: dict[tuple[Any, ...], AgentProfile | None] = {}
        self._policies: dict[str, Any] = {}

    def policy_for(self, policy: Any, profile: AgentProfile) -> Any:
        """``policy`` (an EffectivePolicy) reading its traces through ``profile``; one per
        profile, so the derived settings and their memo are shared by the agent's requests."""
        derived = self._policies.get(profile.name)
        if derived is None:
            derived = self._policies[profile.name] = replace(
                policy,
                trace_settings=derive(policy.trace_settings, profile),
                profile=profile.name,
                interventions=_ending(policy.interventions, profile),
            )
        return derived

    def recognise(self, conv: Conversation, user_agent: str = "") -> AgentProfile | None:
        if self.choice == GENERIC or not self.profiles:
            return None
        if self.choice != AUTO:
            return self.by_name[self.choice]
        system = _system_text(conv)
        shape = (conv.tools, system, user_agent)
        try:
            return self._shapes[shape]
        except KeyError:
            pass
        if len(self._shapes) >= _MAX_SHAPES:
            self._shapes.clear()
        found = self._shapes[shape] = _best(self.profiles, conv.tools, system, user_agent)
        return found


def _system_text(conv: Conversation) -> str:
    parts = []
    for turn in conv.turns[:4]:
        if turn.role == "system":
            parts.append(turn.text[:_SYSTEM_CHARS])
    return "\n".join(parts)[:_SYSTEM_CHARS]


def _best(
    profiles: tuple[AgentProfile, ...], tools: frozenset[str] | None, system: str, user_agent: str
) -> AgentProfile | None:
    """A profile the system prompt or User-Agent names; else the one whose marking tools the
    request declares most of (a fork declares its parent's tools and its own)."""
    best, rank = None, (-1, -1)
    for profile in profiles:
        rule = profile.recognize
        named, overlap = rule.named(system, user_agent), rule.declared(tools)
        if not named and not overlap:
            continue
        score = (1 if named else 0, overlap)
        if score > rank:
            best, rank = profile, score
    return best


def derive(base: TraceSettings, profile: AgentProfile) -> TraceSettings:
    """The trace settings of ``base`` read through ``profile``."""
    results = profile.results
    data = base.model_dump()
    planning = {name for name, role in profile.tools.items() if role.action == "plan"}
    data.update(
        profile=profile.name,
        tool_roles={**base.tool_roles, **profile.tools},
        envelope_patterns=base.envelope_patterns + results.volatile,
        not_error_patterns=base.not_error_patterns + results.not_errors,
        extra_error_patterns=base.extra_error_patterns + results.errors,
        failure_patterns=base.failure_patterns + multiline(results.refusals),
        empty_patterns=base.empty_patterns + results.empty,
        nudge_patterns=base.nudge_patterns + profile.nudges,
        neutral_tools=base.neutral_tools | planning,
        text_actions=profile.text_actions if profile.text_actions != "none" else base.text_actions,
        text_result_patterns=base.text_result_patterns + profile.text_results,
    )
    return TraceSettings.model_validate(data)


def _ending(interventions: Any, profile: AgentProfile) -> Any:
    """The policy's interventions with the end of a run this client takes as final: an error it
    would retry is no end, it is a retry storm (``AgentProfile.terminate``)."""
    terminate = interventions.terminate
    wanted = profile.terminate.error
    if terminate.mode != "error" or wanted is None:
        return interventions
    changed = terminate.model_copy(update={"mode": "answer"} if wanted == "answer" else {"status": wanted})
    return interventions.model_copy(update={"terminate": changed})
