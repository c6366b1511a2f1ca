"""Cline CLI through a real gateway: its settings files and command line.

Cline (``cline PROMPT``, act mode, tools auto-approved) runs on Node 22. It keeps its settings
under ``$HOME/.cline/data/settings``: ``providers.json`` selects the ``openai-compatible``
provider (chat completions, always streamed) with the gateway as its base URL, and
``global-settings.json`` opts out of telemetry and auto-update. ``CLINE_SESSION_BACKEND_MODE=
local`` keeps the session in the CLI's own process: otherwise it starts a background "hub"
daemon that outlives the run.

Cline's tools take lists (``read_files`` ``{"files": [{"path", "start_line", "end_line"}]}``,
``run_commands`` ``{"commands": [...]}``) and answer each element as a JSON object
``{"query": ..., "result": ..., "error"?: ..., "success": bool}``. The scripted model
(tests/support/clis_copilot.py) is shared with Copilot CLI: both speak chat completions.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.clis import PREFIX, node22

MODEL = "test-model"


def cline_script() -> Path | None:
    """Cline's launcher script (it starts the compiled CLI that npm placed next to it)."""
    script = PREFIX / "lib" / "node_modules" / "cline" / "bin" / "cline"
    return script if script.exists() else None


def available() -> bool:
    return cline_script() is not None and node22() is not None


def write_settings(home: Path, gateway: str) -> None:
    """The provider at the gateway; telemetry and auto-update off."""
    settings = home / ".cline" / "data" / "settings"
    settings.mkdir(parents=True, exist_ok=True)
    provider = {"provider": "openai-compatible", "apiKey": "sk-cline-test", "model": MODEL, "baseUrl": gateway + "/v1"}
    providers = {
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "modes": {},
        "providers": {
            "openai-compatible": {
                "settings": provider,
                "updatedAt": "2026-01-01T00:00:00.000Z",
                "tokenSource": "manual",
            }
        },
    }
    (settings / "providers.json").write_text(json.dumps(providers, indent=2))
    (settings / "global-settings.json").write_text(json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False}))


def cline_env(home: Path) -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR")}
    return {**keep, "HOME": str(home), "CLINE_SESSION_BACKEND_MODE": "local", "CI": "1", "NO_COLOR": "1"}


def run_cline(prompt: str, work: Path, home: Path, gateway: str, timeout: int = 170) -> subprocess.CompletedProcess:
    """``cline PROMPT`` headless in ``work`` (act mode, auto-approved) through the gateway."""
    write_settings(home, gateway)
    command = [
        node22() or "node",
        str(cline_script()),
        prompt,
        "-P",
        "openai-compatible",
        "-m",
        MODEL,
        "--cwd",
        str(work),
        "--auto-approve",
        "true",
    ]
    return subprocess.run(command, cwd=work, env=cline_env(home), capture_output=True, text=True, timeout=timeout)
