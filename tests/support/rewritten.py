"""The test modules' assertion-rewritten bytecode, written once before the workers start.

pytest rewrites each test module's ``assert`` statements on import and caches the result beside
it, unless the environment forbids writing bytecode (``PYTHONDONTWRITEBYTECODE``, as CI sets
it): then every xdist worker parses and rewrites all ~300 modules again, ~8 s of CPU each, at the
same moment, on a fresh clone. Written here, once, the workers read them as pytest reads any
cached rewrite (validated against the source, so an edited module is rewritten again).

This drives pytest's own rewriter by its internal names; a pytest that renames them only
loses the head start (each worker rewrites as before), never a test.
"""

from __future__ import annotations

from pathlib import Path

import pytest


def rewrite_once(config: pytest.Config, tests: Path) -> int:
    """Writes the rewritten bytecode of every test module and conftest under ``tests`` that has
    none current; the number written."""
    if config.getoption("assertmode") != "rewrite":
        return 0
    try:
        from _pytest.assertion import rewrite

        state = config.stash[rewrite.assertstate_key]
        read, rewrite_test, write = rewrite._read_pyc, rewrite._rewrite_test, rewrite._write_pyc
        cache_dir_of, tail = rewrite.get_cache_dir, rewrite.PYC_TAIL
    except (ImportError, AttributeError, KeyError):
        return 0
    written = 0
    for source in sorted({*tests.rglob("test_*.py"), *tests.rglob("conftest.py")}):
        cache_dir = cache_dir_of(source)
        pyc = cache_dir / (source.name[:-3] + tail)
        if read(source, pyc) is not None:
            continue
        cache_dir.mkdir(parents=True, exist_ok=True)
        stamp, code = rewrite_test(source, config)
        written += bool(write(state, code, stamp, pyc))
    return written
