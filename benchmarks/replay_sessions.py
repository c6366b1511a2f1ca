"""What ``loopguard replay`` costs over a team's history: N sessions read from disk, replayed
through the shipped default policy and scored against their labels, in one process (one core).

The sessions: the development corpus (real runs of six agents, labelled; ``--corpus``, by default
``../shared/corpus/runs.jsonl.xz``) as one JSON-lines file of labelled runs, and the logs the
pinned clients wrote (``tests/fixtures/sessions``: Claude Code, Codex, Gemini CLI, Cline) in their
own layouts, copied until there are N. Each further copy of a corpus run carries a mark of its own
in every tool call's arguments and result (the same within the run, so its repeats still repeat),
so no cache sees a run twice; the client logs are copied as they are.

The replay runs as an operator runs it: ``python -m gateway replay DIR --labels ... --json ...``
in a child process, timed (wall and CPU) with its peak memory (max RSS) from ``getrusage``; then
the same files are only read (no replay), in process, to show what reading costs.

    python benchmarks/replay_sessions.py [--sessions 1000] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import lzma
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import ROOT

sys.path.insert(0, str(ROOT))

from gateway.replay.logs import read_source
from gateway.replay.sources import find

FIXTURES = ROOT / "tests" / "fixtures" / "sessions"
CLIENT_SHARE = 0.05  # of the sessions, the client logs (the rest: corpus runs)


def marked(run: dict[str, Any], copy: int) -> dict[str, Any]:
    """The corpus run as its ``copy``-th copy: its own id, and a mark in every call and result."""
    if copy == 0:
        return run
    messages = []
    for message in run["messages"]:
        message = dict(message)
        if message.get("role") == "tool":
            message["content"] = f"[copy {copy}] {message.get('content') or ''}"
        if message.get("tool_calls"):
            message["tool_calls"] = [_marked_call(c, copy) for c in message["tool_calls"]]
        messages.append(message)
    return {**run, "id": f"{run['id']}~{copy}", "messages": messages}


def _marked_call(call: dict[str, Any], copy: int) -> dict[str, Any]:
    function = dict(call["function"])
    try:
        arguments = json.loads(function["arguments"])
    except (TypeError, ValueError):
        arguments = None
    if isinstance(arguments, dict):
        function["arguments"] = json.dumps({**arguments, "copy": copy})
    return {**call, "function": function}


def build(folder: Path, corpus: Path, sessions: int) -> tuple[int, int]:
    """Writes the sessions under ``folder``; (corpus runs, client logs) written."""
    with lzma.open(corpus, "rt", encoding="utf-8") as lines:
        runs = [json.loads(line) for line in lines if line.strip()]
    clients = [p for p in sorted(FIXTURES.rglob("*.json*")) if p.name not in ("wire.json",) and "make_" not in p.name]
    logs = [p for p in clients if not p.name.endswith(".meta.json") and not _cline_meta(p)]
    client_count = max(len(logs), int(sessions * CLIENT_SHARE)) // len(logs) * len(logs)
    corpus_count = sessions - client_count
    with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
        for n in range(corpus_count):
            out.write(json.dumps(marked(runs[n % len(runs)], n // len(runs))) + "\n")
    for copy in range(client_count // len(logs)):
        for path in logs:
            target = folder / "clients" / str(copy) / path.relative_to(FIXTURES)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return corpus_count, client_count


def _cline_meta(path: Path) -> bool:
    return path.parent.name == path.stem  # Cline CLI's <id>/<id>.json beside <id>.messages.json


def replay_child(folder: Path, report: Path) -> dict[str, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "gateway", "replay", str(folder), "--json", str(report), "--quiet"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "cpu_s": cpu, "max_rss_mb": after.ru_maxrss / 1024}


def read_only(folder: Path) -> tuple[int, float]:
    start = time.process_time()
    runs = sum(len(read_source(source)) for source in find([str(folder)]).sources)
    return runs, time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus" / "runs.jsonl.xz")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    if not args.corpus.exists():
        sys.exit(f"no corpus at {args.corpus} (--corpus names it)")
    with tempfile.TemporaryDirectory(prefix="lg-replay-bench-") as tmp:
        folder = Path(tmp) / "sessions"
        folder.mkdir()
        corpus_runs, client_logs = build(folder, args.corpus, args.sessions)
        size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
        report = Path(tmp) / "replay.json"
        measured = replay_child(folder, report)
        document = json.loads(report.read_text())
        runs, read_cpu = read_only(folder)
    replayed = len(document["runs"])
    calls = sum(r["calls"] for r in document["runs"])
    results = {
        "sessions": replayed,
        "corpus_runs": corpus_runs,
        "client_logs": client_logs,
        "tool_calls": calls,
        "log_mb": round(size / 1e6, 1),
        "errors": len(document["errors"]),
        **{k: round(v, 2) for k, v in measured.items()},
        "sessions_per_min_cpu": round(replayed / measured["cpu_s"] * 60),
        "read_only_cpu_s": round(read_cpu, 2),
        "labels": {
            k: {"runs": g["runs"], "warned": g["warned"], "stopped": g["stopped"]}
            for k, g in document["scores"]["labels"].items()
        },
    }
    assert runs == replayed, (runs, replayed)
    print(
        f"{replayed} sessions ({corpus_runs} corpus runs, {client_logs} client logs; {calls:,} tool calls, "
        f"{results['log_mb']} MB of logs), {results['errors']} unreadable\n"
        f"replay + scores: {measured['wall_s']:.1f} s wall, {measured['cpu_s']:.1f} s CPU (one process), "
        f"{results['sessions_per_min_cpu']:,} sessions a minute of CPU, peak RSS {measured['max_rss_mb']:.0f} MB\n"
        f"reading alone: {read_cpu:.2f} s CPU\n"
        f"labels: {results['labels']}"
    )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
