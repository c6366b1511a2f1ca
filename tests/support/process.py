"""The gateway as its operators run it: ``loopguard serve`` / ``python -m gateway`` in a subprocess.

The child imports this checkout's ``gateway`` (PYTHONPATH), not whatever is installed, so a test
run from a worktree tests that worktree.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def loopguard_command() -> list[str]:
    """The installed console script; ``python -m gateway`` when it is not installed."""
    script = Path(sys.executable).with_name("loopguard")
    found = str(script) if script.exists() else shutil.which("loopguard")
    return [found] if found else [sys.executable, "-m", "gateway"]


@dataclass
class Running:
    process: subprocess.Popen
    url: str
    stderr_path: Path

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@contextmanager
def gateway_process(args: Sequence[str], port: int, stderr_path: Path, env: dict[str, str] | None = None,
                    command: Sequence[str] | None = None, ready_timeout: float = 20.0) -> Iterator[Running]:
    """Start the gateway, wait until /healthz answers, and SIGTERM it when the block exits."""
    command = list(command or [sys.executable, "-m", "gateway"])
    with open(stderr_path, "wb") as stderr:
        process = subprocess.Popen([*command, *args], env=env or child_env(), cwd=ROOT,
                                   stdout=subprocess.DEVNULL, stderr=stderr)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + ready_timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"gateway exited with {process.returncode}: {stderr_path.read_text()}")
            try:
                if httpx.get(url + "/healthz", timeout=0.5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"gateway did not answer /healthz: {stderr_path.read_text()}")
            time.sleep(0.05)
        yield Running(process, url, stderr_path)
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
