"""End to end with Gemini CLI itself (``gemini -p ... --yolo``, the ``gemini-api-key`` auth
type, ``GOOGLE_GEMINI_BASE_URL`` at the gateway) against a scripted upstream whose model lists
the same directory forever: the run is ended with the model's tools-closed answer and the CLI
exits 0. Skipped where the CLI is not installed (``npm install -g @google/gemini-cli``)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
from support.gemini_gateway import start_gemini
from support.gemini_upstream import Said, tools_closed

pytestmark = pytest.mark.skipif(shutil.which("gemini") is None, reason="Gemini CLI is not installed")

FINAL = "FINAL ANSWER: the directory listing never changed, so I stopped."
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


def lister(work: str, proposed: list):
    """The looping model: whenever ``list_directory`` is declared, it calls it again; its other
    requests (the CLI's own routing and next-speaker checks) get a short JSON answer."""

    def respond(body: dict) -> Said:
        if tools_closed(body):
            return Said(text=FINAL)
        declared = [d for t in body.get("tools", []) for d in t.get("functionDeclarations", [])]
        tool = next((d for d in declared if d["name"] in ("list_directory", "ls")), None)
        if tool is None:
            return Said(text='{"reasoning": "done", "next_speaker": "user"}')
        params = tool.get("parameters") or tool.get("parametersJsonSchema") or {}
        args = {name: work for name in params.get("required", [])}
        proposed.append(args)
        return Said(calls=[(tool["name"], args)])

    return respond


def test_a_looping_gemini_cli_run_is_ended_with_the_models_answer(start_gemini, tmp_path):
    work, home = tmp_path / "work", tmp_path / "home"
    work.mkdir()
    (work / "a.txt").write_text("a\n")
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    proposed: list = []
    upstream, _, gateway = start_gemini(lister(str(work), proposed))
    env = {
        **os.environ,
        "HOME": str(home),
        "GEMINI_API_KEY": "gm-cli",
        "GOOGLE_GEMINI_BASE_URL": gateway,
        "NO_BROWSER": "1",
        "CI": "1",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }
    run = subprocess.run(
        ["gemini", "-p", f"list the files in {work}", "--yolo"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert FINAL in run.stdout
    assert len(proposed) <= 8  # proposed calls; the executed ones are fewer (a refused one is not run)
    guarded = [r for r in upstream.requests if r["path"].endswith(":streamGenerateContent")]
    assert guarded and all("alt=sse" in r["query"] for r in guarded)
    assert tools_closed(upstream.requests[-1]["json"])  # the answer was asked with tools closed
