"""``loopguard replay PATH... [--policy P] [--compare P2] [--labels FILE] [--suggest N]
[--html FILE] [--json FILE]``: find the logs, read each in its format, replay every run, score,
print and write the reports. Offline: nothing is sent anywhere.

Logs are read and replayed one file at a time, so thousands of sessions cost the memory of their
results, not of their logs; a file that cannot be read is listed with the reason and the others
go on.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from gateway.policy.loader import load_policy, policy_path
from gateway.policy.model import Policy
from gateway.policy.schema import PolicyError
from gateway.replay.labels import LabelError, Labels, read_labels
from gateway.replay.logs import FORMATS, LogError, Source, format_of, runs_in
from gateway.replay.model import Result
from gateway.replay.run import Run
from gateway.replay.runner import replay_run
from gateway.replay.sources import find
from gateway.replay.table import render_compare, render_scores, render_table
from gateway.savings import Pricer
from gateway.state.memory import MemoryStore


@dataclass(slots=True)
class Replayed:
    """What one policy made of every run, in the order they were read."""

    policy: Policy
    results: list[Result] = field(default_factory=list)
    # Request bodies that name no session share one store, as the server's requests do: a
    # conversation recorded after the agent compacted continues the one recorded before it.
    fingerprints: MemoryStore = field(default_factory=MemoryStore)


@dataclass(slots=True)
class Reading:
    errors: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    skipped: int = 0  # files found in folders that are no log replay reads
    runs: int = 0


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
    compare: str | None = None,
    labels: str | None = None,
    suggest: int = 0,
    json_out: str | None = None,
    fmt: str | None = None,
) -> int:
    if fmt is not None and fmt not in FORMATS:
        print(f"loopguard: --format {fmt}: not a format replay reads (one of {', '.join(FORMATS)})", file=err)
        return 2
    try:
        policies = [load_policy_ref(ref) for ref in (policy_ref, compare) if ref]
        marks = read_labels(labels) if labels else Labels()
    except (PolicyError, LabelError, FileNotFoundError, ValueError) as exc:
        print(f"loopguard: {exc}", file=err)
        return 1
    found = find(files)
    for missing in found.missing:
        print(f"loopguard: {missing}: no such file or folder", file=err)
    for policy in policies:
        if policy.default.shadow and not quiet:
            print(f"note: {policy.name} is a shadow policy; showing what it would do when enforced", file=err)
    replays = [Replayed(p) for p in policies]
    pricer = Pricer(model)
    reading = asyncio.run(_replay_all(found.sources, replays, marks, fmt, agent, pricer, quiet or not _tty(err), err))
    for path, reason in reading.errors:
        print(f"loopguard: skipped {path}: {reason}", file=err)
    if reading.skipped and not quiet:
        print(f"note: {reading.skipped} files in those folders are no session log replay reads", file=err)
    for key in marks.unused():
        print(f"note: the label for {key!r} names no replayed run", file=err)
    if not reading.runs:
        print("loopguard: no runs found (see docs/sessions-replay.md for the logs replay reads)", file=err)
        return 1
    _print(replays, out, labelled=any(r.label for r in replays[0].results), suggest=suggest)
    if (html or json_out) and pricer.methods and not quiet:
        print(pricing_note(pricer), file=err)
    if json_out:
        _write_json(json_out, replays, reading.errors)
        print(f"wrote {json_out}", file=err)
    if html:
        _write_html(html, replays[0], found.sources, pricer)
        print(f"wrote {html}", file=err)
    return 0


def load_policy_ref(ref: str) -> Policy:
    """A policy file, or the name of a shipped pack (default, shadow, warn-only, strict, ...)."""
    return load_policy(policy_path(ref))  # a missing file raises PolicyError naming it


async def _replay_all(
    sources: list[Source],
    replays: list[Replayed],
    marks: Labels,
    fmt: str | None,
    agent: str | None,
    pricer: Pricer,
    quiet: bool,
    err: IO[str],
) -> Reading:
    from tqdm import tqdm

    reading = Reading()
    bar = tqdm(sources, desc="replaying", unit="file", file=err, disable=quiet or len(sources) < 2, leave=False)
    for source in bar:
        for run in _read(source, fmt, reading):
            label = marks.of(run)
            run.label, run.loop_at = (label.label, label.loop_at) if label else (None, None)
            for replayed in replays:
                store = replayed.fingerprints if run.shared_state else MemoryStore()
                result = await replay_run(run, replayed.policy, agent, store)
                if result.cut is not None:
                    result.savings = pricer.savings(run.items_from(result.cut), result.model, run.kind)
                replayed.results.append(result)
            reading.runs += 1
        bar.set_postfix(runs=reading.runs, errors=len(reading.errors), refresh=False)
    return reading


def _read(source: Source, fmt: str | None, reading: Reading) -> Iterator[Run]:
    """The runs of ``source`` as it is read; a reason in ``reading.errors`` when it cannot be."""
    try:
        if fmt is None and not source.explicit and format_of(source) is None:
            reading.skipped += 1
            return
        yield from runs_in(source, fmt)
    except LogError as exc:
        reading.errors.append((str(source.path), str(exc)))


def _print(replays: list[Replayed], out: IO[str], labelled: bool, suggest: int) -> None:
    main = replays[0]
    if len(replays) == 2:
        other = replays[1]
        print(render_compare(main.results, other.results, (main.policy.name, other.policy.name)), file=out)
    else:
        print(render_table(main.results), file=out)
    if labelled:
        from gateway.replay.scores import scores

        for replayed in replays:
            print("\n" + render_scores(scores(replayed.results), replayed.policy.name), file=out)
    if suggest:
        from gateway.replay.suggest import excerpt
        from gateway.replay.suggest import suggest as worth

        picked = worth(main.results, suggest)
        print(f"\nthe {len(picked)} runs most worth labelling:", file=out)
        for result, sign in picked:
            print("\n" + excerpt(result, sign), file=out)


def _write_json(path: str, replays: list[Replayed], errors: list[tuple[str, str]]) -> None:
    from gateway.replay.report_json import document, dumps

    main = replays[0]
    compared = (replays[1].policy.name, replays[1].results) if len(replays) == 2 else None
    Path(path).write_bytes(dumps(document(main.results, errors, main.policy.name, compared)))


def _write_html(path: str, replayed: Replayed, sources: list[Source], pricer: Pricer) -> None:
    from gateway.replay.report_html import render_html

    page = render_html(
        replayed.results,
        policy=replayed.policy.name,
        sources=sorted({s.rel for s in sources}),
        unknown_models=sorted(pricer.estimated | pricer.unpriced),
        generated=time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    )
    Path(path).write_text(page, encoding="utf-8")


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
