"""``loopguard replay FILES... --policy P [--html FILE]``: read, replay, print, report."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import IO

from gateway.policy.loader import load_policy, policy_path
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError
from gateway.replay.model import Result
from gateway.replay.reader import Reading, read_files
from gateway.replay.runner import replay
from gateway.replay.table import render_table
from gateway.savings import Pricer
from gateway.state.memory import MemoryStore


def run_replay(
    files: list[str],
    policy_ref: str = "default",
    *,
    html: str | None = None,
    agent: str | None = None,
    model: str | None = None,
    quiet: bool = False,
    out: IO[str] = sys.stdout,
    err: IO[str] = sys.stderr,
) -> int:
    try:
        policy = load_policy_ref(policy_ref)
    except (PolicyError, FileNotFoundError, ValueError) as exc:
        print(f"loopguard: {exc}", file=err)
        return 1
    reading = read_files(files)
    for problem in reading.problems:
        print(f"loopguard: skipped {problem}", file=err)
    if not reading.conversations:
        print("loopguard: no conversations found (expected JSONL of request bodies, or a JSON list)", file=err)
        return 1
    if policy.default.shadow and not quiet:
        print(f"note: {policy.name} is a shadow policy; showing what it would do when enforced", file=err)
    results = _replay_all(reading, policy, agent, show_progress=not quiet and _tty(err), err=err)
    print(render_table(results), file=out)
    if html:
        unknown = _price(results, reading, model, quiet, err)
        from gateway.replay.report_html import render_html

        page = render_html(
            results,
            policy=policy.name,
            sources=sorted({r.source for r in reading.conversations}),
            unknown_models=sorted(unknown),
            generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        )
        Path(html).write_text(page, encoding="utf-8")
        print(f"wrote {html}", file=err)
    return 0


def load_policy_ref(ref: str) -> Policy:
    """A policy file, or the name of a shipped pack (default, shadow, warn-only, strict, ...)."""
    return load_policy(policy_path(ref))  # a missing file raises PolicyError naming it


def _replay_all(
    reading: Reading, policy: Policy, agent: str | None, *, show_progress: bool, err: IO[str]
) -> list[Result]:
    from tqdm import tqdm

    bar = tqdm(
        reading.conversations,
        desc="replaying",
        unit="conversation",
        file=err,
        disable=not show_progress or len(reading.conversations) < 2,
        leave=False,
    )
    sessions = MemoryStore()  # shared, as the server's: a session's later conversations see its earlier ones
    return [replay(recorded, policy, agent, sessions) for recorded in bar]


def _price(results: list[Result], reading: Reading, model: str | None, quiet: bool, err: IO[str]) -> set[str]:
    """Savings for each conversation the policy would have stopped; the models it could not price."""
    stopped = [(r, rec) for r, rec in zip(results, reading.conversations) if r.cut is not None]
    pricer = Pricer(model)
    for result, recorded in stopped:
        result.savings = pricer.savings(recorded.messages[result.cut :], result.model, recorded.kind)
    if stopped and not quiet:
        print(pricing_note(pricer), file=err)
    return pricer.estimated | pricer.unpriced


def pricing_note(pricer: Pricer) -> str:
    """How each model was priced, in one line per model, for the operator reading stderr."""
    lines = ["savings priced with litellm's price table, read as data (offline):"]
    for name, how in sorted(pricer.methods.items()):
        tokens = "tokens estimated (characters / 4)" if how.tokens == "estimated" else f"tokens by {how.tokens}"
        price = {"table": "list price", "config": "price from the config", "none": "no price"}[how.price]
        lines.append(f"  {name}: {tokens}, {price}")
    return "\n".join(lines)


def _tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
