"""The README's test command on a machine without the system packages the suite drives: the run
ends at once with one line naming what to install."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_machine_without_redis_server_or_chromium_is_told_what_to_install(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path), "LOOPGUARD_CHROMIUM": str(tmp_path / "chromium")}
    run = subprocess.run(  # in parallel, as the README's command runs the suite
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "tests/trace/test_memo.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 4, run.stdout + run.stderr
    said = [line for line in (run.stdout + run.stderr).splitlines() if "install" in line]
    assert said == [
        "ERROR: missing redis-server and chromium: install redis-server chromium first "
        "(Debian/Ubuntu: apt-get install redis-server chromium; .ci/run does)"
    ], run.stdout + run.stderr
