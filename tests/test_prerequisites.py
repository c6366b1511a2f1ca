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


def test_test_modules_are_rewritten_once_before_the_workers_and_again_once_edited(pytestconfig, tmp_path):
    from support.rewritten import rewrite_once

    module = tmp_path / "test_a.py"
    module.write_text("def test_a():\n    assert 1 == 1\n")
    (tmp_path / "helper.py").write_text("X = 1\n")  # not a test module: left to the import system
    assert rewrite_once(pytestconfig, tmp_path) == 1
    assert rewrite_once(pytestconfig, tmp_path) == 0  # current: read by the workers as it is
    module.write_text("def test_a():\n    assert 2 == 2\n")
    stat = module.stat()
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert rewrite_once(pytestconfig, tmp_path) == 1
