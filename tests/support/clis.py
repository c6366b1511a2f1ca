"""Where the pinned coding-agent CLIs are: on PATH, else under the prefix `.ci/run` installs them
into (``LOOPGUARD_AGENTS_PREFIX``, default /opt/lg-agents). A test of a CLI that is not there
is skipped, never failed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PREFIX = Path(os.environ.get("LOOPGUARD_AGENTS_PREFIX", "/opt/lg-agents"))


def find_cli(name: str) -> str | None:
    """The executable of CLI ``name`` (``claude``, ``codex``, ``gemini`` ...), or None."""
    found = shutil.which(name)
    if found:
        return found
    candidate = PREFIX / "bin" / name
    return str(candidate) if candidate.exists() else None


def node22() -> str | None:
    """A Node 22 binary (Cline needs it): the one `.ci/run` installs from npm, else ``node`` on
    PATH when it is 22 or newer."""
    candidate = PREFIX / "node22" / "node_modules" / "node" / "bin" / "node"
    if candidate.exists():
        return str(candidate)
    node = shutil.which("node")
    if node is None:
        return None
    import subprocess

    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout.strip()
    return (
        node if version.lstrip("v").split(".")[0].isdigit() and int(version.lstrip("v").split(".")[0]) >= 22 else None
    )


def agents_env() -> dict[str, str]:
    """PATH with the prefix's bin directory, for a CLI that starts other CLIs (node, rg)."""
    return {"PATH": f"{PREFIX / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
