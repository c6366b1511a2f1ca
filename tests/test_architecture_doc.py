"""docs/architecture.md names real code: every module it quotes exists, and every name it
quotes in one (``module.py:name``, ``module.py:Class.method``) is defined there. A renamed or
moved stage fails here until the picture follows it."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
GATEWAY = ROOT / "gateway"
# A module path, optionally with the name it defines: protocols/chat/stream.py:ToolCallFilter
REFERENCE = re.compile(r"(?<![\w/.<])((?:[a-z_]+/)*[a-z_]+\.py)(?!\w)(?::([A-Za-z_][\w.]*))?")


def references(text: str) -> set[tuple[str, str | None]]:
    return {(m[1], m[2] or None) for m in REFERENCE.finditer(text)}


def module_files(path: str) -> list[Path]:
    """A quoted path, from the repository root, from ``gateway/`` or ``gateway/protocols/``;
    a bare or one-folder path (the protocols' own modules, quoted by the sections about them)
    may be any module of that name under ``gateway/``."""
    for base in (ROOT, GATEWAY, GATEWAY / "protocols"):
        if (base / path).is_file():
            return [base / path]
    return sorted(GATEWAY.rglob(path)) if path.count("/") <= 1 else []


@cache
def _defined(path: Path) -> dict[str, set[str]]:
    """Top-level names of a module, each with the names its class body defines."""
    names: dict[str, set[str]] = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            inner = {n.name for n in getattr(node, "body", []) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            inner |= {
                t.id
                for n in getattr(node, "body", [])
                if isinstance(n, ast.AnnAssign | ast.Assign)
                for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
                if isinstance(t, ast.Name)
            }
            names[node.name] = inner
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                if isinstance(target, ast.Name):
                    names[target.id] = set()
    return names


QUOTED = sorted(references(DOC.read_text(encoding="utf-8")), key=lambda r: (r[0], r[1] or ""))


@pytest.mark.parametrize(("path", "name"), QUOTED, ids=[f"{p}:{n}" if n else p for p, n in QUOTED])
def test_every_quoted_module_and_name_exists(path, name):
    found = module_files(path)
    assert found, f"docs/architecture.md quotes {path}, which does not exist"
    if name is not None:
        head, _, attr = name.partition(".")
        defining = [f for f in found if head in _defined(f) and (not attr or attr in _defined(f)[head])]
        assert defining, f"no {path} defines {name}"


def test_the_doc_quotes_the_stages():
    quoted = {p for p, _ in QUOTED}
    assert {"pipeline/route.py", "guard/planner.py", "wire/codec.py", "wire/credentials.py"} <= quoted


def test_the_reference_pattern():
    text = "`server/front.py:Front` and context.py:Gateway.forward_headers, not gateway/x/ or a.pyc"
    assert references(text) == {("server/front.py", "Front"), ("context.py", "Gateway.forward_headers")}
