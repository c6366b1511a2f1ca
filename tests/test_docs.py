"""The README stays short and the documentation site builds strictly.

The README says what LoopGuard is and how to start; everything else is a page of the site built
from docs/ by mkdocs. A strict build fails on any warning: a broken link or anchor, a page left
out of the nav, a missing snippet (the performance page includes benchmarks/RESULTS.md).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MAX_README_LINES = 200


def test_the_readme_is_at_most_200_lines() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines; move the detail to a page under docs/"


def test_the_readme_keeps_the_two_commands_ci_runs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "python -m pip install . && loopguard serve\n" in text
    command = 'python -m pip install -c constraints/test.txt -e ".[test]" && python -m pytest\n'
    assert command in text
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    warnings = [line for line in output.splitlines() if line.startswith("WARNING")]
    assert result.returncode == 0 and not warnings, output[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    performance = (tmp_path / "site" / "performance" / "index.html").read_text(encoding="utf-8")
    assert "benchmarks/overhead.py" in performance  # the dated results were included
