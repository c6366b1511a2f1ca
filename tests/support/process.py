"""The gateway as its operators run it: ``loopguard serve`` / ``python -m gateway`` in a subprocess.

The child imports this checkout's ``gateway`` (PYTHONPATH), not whatever is installed, so a test
run from a worktree tests that worktree.
"""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from support.ports import free_port

__all__ = [
    "ROOT",
    "Running",
    "child_env",
    "console_script",
    "free_port",
    "gateway_process",
    "loopguard_command",
    "serving",
]

ROOT = Path(__file__).resolve().parents[2]


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOOPGUARD_")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def console_script(name: str) -> str | None:
    """The console script ``name`` installed next to this Python (the venv's), else on PATH."""
    script = Path(sys.executable).with_name(name)
    return str(script) if script.exists() else shutil.which(name)


def loopguard_command() -> list[str]:
    """The installed console script; ``python -m gateway`` when it is not installed."""
    found = console_script("loopguard")
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
def gateway_process(
    args: Sequence[str],
    port: int,
    stderr_path: Path,
    env: dict[str, str] | None = None,
    command: Sequence[str] | None = None,
    ready_timeout: float = 60.0,
) -> Iterator[Running]:
    """Start the gateway, wait until /healthz answers, and SIGTERM it when the block exits.
    ``ready_timeout`` only bounds a start that never comes: on a loaded machine (parallel test
    workers on two cores) a healthy start can take tens of seconds."""
    command = [*(command or [sys.executable, "-m", "gateway"]), *args]
    url = f"http://127.0.0.1:{port}"
    with serving(
        command, stderr_path, url + "/healthz", env=env or child_env(), cwd=ROOT, ready_timeout=ready_timeout
    ) as process:
        yield Running(process, url, stderr_path)


@contextmanager
def serving(
    command: Sequence[str],
    log_path: Path,
    ready_url: str,
    *,
    env: dict[str, str],
    cwd: Path,
    ready_timeout: float,
    probe_timeout: float = 0.5,
    poll_s: float = 0.05,
    stop_timeout: float = 10,
    stdout_too: bool = False,
) -> Iterator[subprocess.Popen]:
    """Run a server the way its operators do: start ``command`` with its stderr (and its stdout,
    when ``stdout_too``) in ``log_path``, wait until ``ready_url`` answers 200, and stop it with
    SIGTERM (a graceful shutdown; killed after ``stop_timeout`` s) when the block exits."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            list(command),
            env=env,
            cwd=cwd,
            stdout=log if stdout_too else subprocess.DEVNULL,
            stderr=subprocess.STDOUT if stdout_too else log,
        )
    try:
        _wait_ready(process, ready_url, log_path, ready_timeout, probe_timeout, poll_s)
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=stop_timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _wait_ready(
    process: subprocess.Popen, url: str, log_path: Path, timeout: float, probe_timeout: float, poll_s: float
) -> None:
    """Probe ``url`` until it answers 200; fail with the log's end when the process exits first
    or ``timeout`` s pass."""
    deadline = time.monotonic() + timeout
    # One client for every probe: a new one loads the CA bundle (~30 ms of CPU) each time, taken
    # from the server that is starting.
    with httpx.Client(timeout=probe_timeout) as client:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"{shlex.join(process.args)} exited with {process.returncode}:\n{_tail(log_path)}")
            try:
                if client.get(url).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"{shlex.join(process.args)}: {url} did not answer in {timeout}s:\n{_tail(log_path)}"
                )
            time.sleep(poll_s)


def _tail(log_path: Path) -> str:
    return log_path.read_text(encoding="utf-8", errors="replace")[-4000:]
