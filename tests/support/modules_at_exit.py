"""``python modules_at_exit.py OUT ARGS...``: the gateway's CLI (``python -m gateway ARGS``), and
when the process exits, the litellm modules it ever imported written to OUT as a JSON list: what a
test reads to know the serving process never imported litellm."""

from __future__ import annotations

import atexit
import json
import runpy
import signal
import sys
from pathlib import Path


def _write(out: Path) -> None:
    out.write_text(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] == "litellm")))


if __name__ == "__main__":
    out = Path(sys.argv[1])
    sys.argv = ["gateway", *sys.argv[2:]]
    atexit.register(_write, out)
    # uvicorn re-raises the SIGTERM that stopped it once it has shut down: to the handler that was
    # there before it, this one, which exits normally so that atexit runs
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    runpy.run_module("gateway", run_name="__main__", alter_sys=True)
