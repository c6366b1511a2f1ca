"""What a fresh interpreter loads: for tests that a path of the gateway keeps a heavy package
(litellm, redis-py) out of the process."""

from __future__ import annotations

import json
import subprocess
import sys


def modules_loaded(code: str, package: str) -> list[str]:
    """The modules of ``package`` loaded once ``code`` has run in a new interpreter."""
    listed = f"sorted(m for m in sys.modules if m.split('.')[0] == {package!r})"
    script = f"{code}\nimport json, sys\nprint(json.dumps({listed}))"
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout.strip().splitlines()[-1])
