"""``loopguard demo`` runs on its own, exits 0, and its transcript shows the whole ladder."""

from __future__ import annotations

import subprocess
import sys

from support.process import ROOT, child_env


def test_demo_shows_warn_reject_terminate_and_exits_0():
    env = child_env()
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)  # no API key needed
    result = subprocess.run(
        [sys.executable, "-m", "gateway", "demo"], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    warn, reject, terminate = out.index("WARN ("), out.index("REJECT ("), out.index("TERMINATE (")
    assert warn < reject < terminate
    assert "[LoopGuard] Loop detected" in out  # the alert the model read
    assert "rejected and not executed" in out  # the veto observation the model read
    assert "x-loopguard-action: terminate" in out
    assert "Traceback" not in result.stderr
