"""Shared pieces of the reliability suite: bounded (count and time) so it runs in CI."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from server.helpers import RawUpstream
from support.ports import refused_port
from support.process import child_env, free_port, gateway_process

# Each example is a real HTTP round trip; the bound keeps the whole suite to well under a
# minute while still covering thousands of shapes across runs (hypothesis varies them).
FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)


@pytest.fixture
def closed_port() -> Iterator[str]:
    """An upstream base URL nothing listens on: connection refused (held for the test, so no
    parallel test's server takes the port)."""
    with refused_port() as port:
        yield f"http://127.0.0.1:{port}/v1"


@pytest.fixture
def raw_upstream():
    made: list[RawUpstream] = []

    def make(handler) -> RawUpstream:
        made.append(RawUpstream(handler))
        return made[-1]

    yield make
    for server in made:
        server.close()


@dataclass
class Child:
    """A gateway run as operators run it (``python -m gateway serve``, JSON logs on stderr)."""

    url: str
    pid: int
    stderr_path: Path
    audit_path: Path

    def log_lines(self) -> list[dict]:
        return [
            json.loads(line)
            for line in self.stderr_path.read_text("utf-8", "replace").splitlines()
            if line.startswith("{")
        ]

    def events(self, name: str) -> list[dict]:
        return [line for line in self.log_lines() if line.get("event") == name]

    def audit(self) -> list[dict]:
        if not self.audit_path.exists():
            return []
        return [json.loads(line) for line in self.audit_path.read_text("utf-8").splitlines()]


@pytest.fixture
def child_gateway(tmp_path):
    """Start a child gateway: ``child_gateway(upstream_url, policy_text=None, **config_sections)``."""
    made: list = []

    def start(upstream_url: str, policy_text: str | None = None, **sections) -> Child:
        n = len(made)
        audit_path = tmp_path / f"audit{n}.jsonl"
        raw = {
            "upstream": {"base_url": upstream_url + "/v1", "anthropic_base_url": upstream_url},
            "audit": {"jsonl_path": str(audit_path)},
        }
        if policy_text is not None:
            (tmp_path / f"policy{n}.yaml").write_text(policy_text)
            raw["policy"] = str(tmp_path / f"policy{n}.yaml")
        for key, value in sections.items():
            raw[key] = {**raw.get(key, {}), **value}
        config = tmp_path / f"gw{n}.yaml"
        config.write_text(json.dumps(raw))  # JSON is YAML
        port = free_port()
        ctx = gateway_process(
            ["serve", "--config", str(config), "--port", str(port)], port, tmp_path / f"stderr{n}.log", env=child_env()
        )
        running = ctx.__enter__()
        made.append(ctx)
        return Child(running.url, running.process.pid, running.stderr_path, audit_path)

    yield start
    for ctx in reversed(made):
        ctx.__exit__(None, None, None)
