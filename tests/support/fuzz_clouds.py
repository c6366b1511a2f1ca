"""Fuzzing every cloud route through a real gateway: random spellings of each generate route,
random malformed parts in its body, random queries and headers, and every way the looping cloud
can break its answer (``cloud_faults``), each request an agent's 5th identical call.

``fuzz(budget, seed)`` sends ``budget`` requests, one at a time, over bare sockets, and tallies
what must never happen: a 5xx of the gateway's own (a 500, or a 5xx that is no upstream failure
it names), the looping call in a success a client reads (an unjudged delivery), a guard error
that let a request through (fail-open), a stream that does not end as its protocol's streams end,
a request that hangs. ``benchmarks/fuzz_clouds.py`` runs it at scale; a test runs a small budget.
"""

from __future__ import annotations

import json
import random
import re
import socket
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from support.client_reads import looping_calls
from support.cloud_faults import FAULTS, applicable, ends_well
from support.cloud_routes import HEADERS, ROUTES, Route, cloud_gateway, looping_body
from support.looping_cloud import LoopingCloud, delivered
from support.rawhttp import RawResponse, send
from support.scrape import series
from support.spellings import INSERTED, encodings, spellings

KINDS = ("spelling", "body", "fault", "query")
WRONG: tuple[Any, ...] = (None, True, 0, -1, 0.5, "", "tool_use", [], ["tool_use"], {}, {"type": "tool_use"}, "\u0000")
QUERY_PIECES = (
    "alt=sse",
    "alt=%FF",
    "x=%C3%A9",
    "%24alt=sse",
    "alt=%73se",
    "key=k",
    "a=1&&b",
    "=",
    "&",
    "%",
    "%zz",
    "x=%00",
    "alt=sse#f",
)
SETTINGS = {"timeout_s": 5, "stream_idle_timeout_s": 1}


@dataclass
class Tally:
    requests: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    spellings: set[str] = field(default_factory=set)
    faults: Counter[str] = field(default_factory=Counter)
    gateway_5xx: list[str] = field(default_factory=list)
    upstream_failures: int = 0  # 502/503/504 the gateway answered, naming the upstream's failure
    marks_relayed: int = 0  # successes holding the mark's bytes in no call a client reads (info)
    unjudged: list[str] = field(default_factory=list)
    fail_opens: list[str] = field(default_factory=list)
    bad_endings: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)

    @property
    def violations(self) -> int:
        return (
            len(self.gateway_5xx) + len(self.unjudged) + len(self.fail_opens) + len(self.bad_endings) + len(self.hangs)
        )

    def summary(self) -> dict[str, Any]:
        return {
            "requests": self.requests,
            "by_kind": dict(self.by_kind),
            "path_spellings": len(self.spellings),
            "broken_upstream_cases": sum(self.faults.values()),
            "fault_kinds": len(self.faults),
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "gateway_5xx": len(self.gateway_5xx),
            "upstream_failures_answered": self.upstream_failures,
            "unjudged_deliveries": len(self.unjudged),
            "mark_bytes_in_unreadable_replies": self.marks_relayed,
            "fail_opens": len(self.fail_opens),
            "malformed_stream_endings": len(self.bad_endings),
            "hangs": len(self.hangs),
            "examples": (self.gateway_5xx + self.unjudged + self.fail_opens + self.bad_endings + self.hangs)[:10],
        }


def _respelt(path: str, rng: random.Random) -> str:
    """A spelling of ``path``: one of the catalogued, or a random escape or insertion."""
    if rng.random() < 0.5:
        return rng.choice(list(spellings(path)))[1]
    at = rng.randrange(1, len(path) + 1)
    if rng.random() < 0.5 and at < len(path):
        how = rng.choice(list(encodings(path[at])))[1]
        return path[:at] + how + path[at + 1 :]
    return path[:at] + rng.choice(INSERTED) + path[at:]


def _mutated(body: Any, rng: random.Random) -> Any:
    """``body`` with one value somewhere in it replaced by a value of another JSON type (or a
    key dropped)."""
    body = json.loads(json.dumps(body))
    nodes: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                nodes.append((node, key))
                walk(value)
        elif isinstance(node, list):
            for index, value in enumerate(node):
                nodes.append((node, index))
                walk(value)

    walk(body)
    parent, key = rng.choice(nodes)
    if isinstance(parent, dict) and rng.random() < 0.15:
        del parent[key]
    else:
        parent[key] = rng.choice(WRONG)
    return body


def _fail_opens(url: str) -> float:
    found = series(url, "loopguard_fail_open_errors_total")
    return found if found is not None else 0.0


def _one(url: str, cloud: LoopingCloud, route: Route, kind: str, rng: random.Random, tally: Tally) -> None:
    path, query, body, headers = route.path, route.query, looping_body(route), list(HEADERS)
    fault_name: str | None = None
    cloud.fault = None
    if kind == "spelling":
        path = _respelt(path, rng)
        tally.spellings.add(path)
    elif kind == "body":
        body = _mutated(body, rng)
    elif kind == "fault":
        fault_name = rng.choice(applicable(route.answered_as))
        fault = FAULTS[fault_name][1]
        cloud.fault = lambda answer: fault(answer, rng)
        tally.faults[fault_name] += 1
    else:
        query = "&".join(q for q in (query, *rng.sample(QUERY_PIECES, rng.randrange(1, 4))) if q)
        if rng.random() < 0.5:
            headers.append(("Expect", "100-continue"))
    target = path + ("?" + query if query else "")
    label = f"{kind} {route.name} {fault_name or ''} {target[:160]}"
    before = _fail_opens(url) if kind == "body" else 0.0
    try:
        answer = send(url, "POST", target, headers, json.dumps(body).encode(), timeout=20)
    except TimeoutError:
        tally.hangs.append(label)
        return
    except OSError as exc:  # the gateway dropped the connection without an answer
        tally.gateway_5xx.append(f"{label}: connection {type(exc).__name__}")
        return
    tally.statuses[answer.status] += 1
    _judge(answer, route, kind, fault_name, label, tally)
    if kind == "body" and _fail_opens(url) != before:
        tally.fail_opens.append(label)


def _judge(answer: RawResponse, route: Route, kind: str, fault: str | None, label: str, tally: Tally) -> None:
    status, body = answer.status, answer.body
    relayed_error = fault is not None and fault.startswith("status-5") and status == int(fault[-3:])
    if status >= 500 and not relayed_error:
        if status in (502, 503, 504) and b"The upstream model provider" in body:
            tally.upstream_failures += 1
        else:
            tally.gateway_5xx.append(f"{label}: {status} {body[:200]!r}")
    success = 200 <= status < 300
    content_type = answer.headers.get("content-type", "")
    # A mutated body may be no loop any more: its call is then no 5th identical one.
    if success and kind != "body" and looping_calls(route.answered_as, body, content_type):
        tally.unjudged.append(f"{label}: {status} {body[:200]!r}")
    if success and kind != "body" and delivered(body):
        tally.marks_relayed += 1  # the mark's bytes, in what is no call a client reads (info)
    streamed = content_type.startswith(("text/event-stream", "application/vnd.amazon.eventstream"))
    if success and streamed and not ends_well(route.answered_as, body):
        tally.bad_endings.append(f"{label}: ends {body[-200:]!r}")


def fuzz(budget: int, seed: int, tmp: Path, kinds: tuple[str, ...] = KINDS) -> Tally:
    """``budget`` requests over every route, ``kinds`` of them, reproducible by ``seed``."""
    rng = random.Random(seed)
    tally = Tally()
    cloud = LoopingCloud()
    with cloud_gateway(tmp, cloud, **SETTINGS) as url:
        for _ in range(budget):
            route = rng.choice(ROUTES)
            kind = rng.choice(kinds)
            tally.requests += 1
            tally.by_kind[kind] += 1
            _one(url, cloud, route, kind, rng, tally)
    return tally
