"""Intervention texts: shipped templates (English, Chinese), load-time checking, safe rendering.

Templates use ``str.format`` syntax with a fixed set of placeholders. They are parsed once at load
into literal/field pieces, so rendering is a join that cannot raise (an unknown or missing value
renders as empty text) and never parses anything on the request path.
"""

from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from structlog import get_logger as _log

from gateway.detectors.base import Finding
from gateway.policy.actions import REJECT_MARKER
from gateway.policy.texts import PATTERN_NAMES, SHIPPED, SPECIAL, TERMS
from gateway.trace.model import Trace

__all__ = [
    "PLACEHOLDERS",
    "REJECT_MARKER",
    "Kind",
    "Messages",
    "check_template",
    "compile_messages",
    "summarize_progress",
]

Kind = Literal["warn", "reject", "reask", "terminate", "answer"]
KINDS: tuple[Kind, ...] = ("warn", "reject", "reask", "terminate", "answer")
PLACEHOLDERS = frozenset({"tool", "detector", "pattern", "count", "steps", "description", "progress"})
# Filled from Finding.details by the detectors that have them (required_tool: call; retrieval:
# query, confidence, reason); empty for the others.
PLACEHOLDERS |= {"call", "query", "confidence", "reason"}
# The fleet's checks (gateway/fleet): other sessions that saw a tool fail, the window or how long
# ago a run was stopped, the error, the server or host, the detector that stopped a loop.
PLACEHOLDERS |= {"sessions", "minutes", "error", "server", "stopped"}


@dataclass(frozen=True, slots=True)
class Template:
    source: str
    pieces: tuple[tuple[str, str | None], ...] = field(repr=False)  # (literal, placeholder|None)

    def render(self, values: dict[str, str]) -> str:
        return "".join(lit + (values.get(f, "") if f else "") for lit, f in self.pieces)


def check_template(text: str) -> Template:
    """Parse once; ValueError names the first unknown placeholder or unsupported syntax."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:  # e.g. a lone "{"
        hint = "write literal braces as {{ and }}"
        raise ValueError(f"bad template syntax ({exc}); {hint}") from None
    pieces = []
    for literal, name, spec, conversion in parsed:
        if name is not None and name not in PLACEHOLDERS:
            raise ValueError(
                f"unknown placeholder {{{name}}} (allowed: " + ", ".join(f"{{{p}}}" for p in sorted(PLACEHOLDERS)) + ")"
            )
        if spec or conversion:
            raise ValueError(f"placeholder {{{name}}}: format specs and conversions are not supported")
        pieces.append((literal, name))
    return Template(text, tuple(pieces))


@dataclass(frozen=True, slots=True)
class Messages:
    language: str
    templates: MappingProxyType[Kind, Template] = field(repr=False)
    special: MappingProxyType[tuple[str, str], Template] = field(repr=False)  # (kind, detector)

    def render(self, kind: Kind, finding: Finding | None, **extra: object) -> str:
        """The text for ``kind``; never raises (a failure logs and falls back to a plain text)."""
        try:
            values = _values(finding, self.language)
            values.update({k: "" if v is None else str(v) for k, v in extra.items()})
            detector = finding.detector if finding is not None else ""
            template = self.special.get((kind, detector)) or self.templates[kind]
            return template.render(values)
        except Exception:
            _log(__name__).exception("policy.render_failed", kind=kind)
            if kind == "reject":
                return REJECT_MARKER + " call rejected: loop detected"
            return "[LoopGuard] Loop detected."


def compile_messages(language: str, overrides: dict[str, str | None]) -> Messages:
    shipped = SHIPPED[language]
    templates = {k: check_template(overrides.get(k) or shipped[k]) for k in KINDS}
    special = {key: check_template(text) for key, text in SPECIAL[language].items() if not overrides.get(key[0])}
    return Messages(language, MappingProxyType(templates), MappingProxyType(special))


def _values(finding: Finding | None, language: str) -> dict[str, str]:
    if finding is None:
        return {}
    names = PATTERN_NAMES.get(language, {})
    terms = TERMS.get(language, {})
    return {
        **{key: terms.get(value, value) for key, value in finding.details},
        # The detector an earlier run was stopped by, named like a pattern (the fleet's recall).
        **{key: names.get(value, value) for key, value in finding.details if key == "stopped"},
        "tool": ", ".join(dict.fromkeys(finding.tools)),  # a cycle names each tool once, in order
        "detector": finding.detector,
        "pattern": names.get(finding.detector, finding.detector.replace("_", " ")),
        "count": str(finding.count),
        "steps": compact_steps(finding.steps),
        "description": finding.description.rstrip(". "),  # templates add their own full stop
    }


def compact_steps(steps: Iterable[int]) -> str:
    """``(3, 4, 5, 7)`` -> ``"3-5, 7"``: thirty repeats stay one short line."""
    runs: list[list[int]] = []
    for step in sorted(set(steps)):
        if runs and step == runs[-1][1] + 1:
            runs[-1][1] = step
        else:
            runs.append([step, step])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def summarize_progress(trace: Trace, language: str = "en", top: int = 5) -> str:
    """What the run did so far, for the terminate text's ``{progress}`` (WeClaw's partial
    result): executed calls only, since proposed and vetoed calls never ran."""
    done = [e.tool for e in trace.events if not e.proposed and not e.vetoed]
    counts = Counter(done).most_common()
    shown = [f"{tool} ×{n}" for tool, n in counts[:top]] + (["…"] if len(counts) > top else [])
    # Calls before the trace horizon were not kept as events, but they did run.
    total = len(done) + trace.skipped
    if trace.skipped:
        shown.append(f"+{trace.skipped} earlier" if language != "zh" else f"另有 {trace.skipped} 次更早的调用")
    if language == "zh":
        return f"{trace.rounds} 轮共 {total} 次工具调用（{'，'.join(shown)}）" if total else "尚未执行任何工具调用"
    if not total:
        return "no tool calls were executed"
    plural = "s" if total != 1 else ""
    return f"{total} tool call{plural} over {trace.rounds} rounds ({', '.join(shown)})"
