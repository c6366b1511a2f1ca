"""Every third-party module the code imports is declared in pyproject.toml: a fresh install
must not depend on what happens to be installed on the machine (watchfiles once was not)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Imported only where an optional extra is installed, each behind its own guard: they must be
# declared in an extra instead.
OPTIONAL = {"litellm"}
# Part of a declared distribution's own API (pydantic pins its pydantic-core exactly).
PROVIDED = {"pydantic_core": "pydantic", "annotated_types": "pydantic"}


def _imports(folder: Path) -> set[str]:
    names = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names


def _declared(requirements: list[str]) -> set[str]:
    return {re.split(r"[\s<>=!~;\[]", r, maxsplit=1)[0].lower().replace("_", "-") for r in requirements}


def _third_party(names: set[str], local: set[str]) -> dict[str, set[str]]:
    dists = packages_distributions()
    out = {}
    for name in names - local - set(sys.stdlib_module_names):
        owners = [PROVIDED[name]] if name in PROVIDED else dists.get(name, [name])
        out[name] = {d.lower().replace("_", "-") for d in owners}
    return out


def test_every_imported_distribution_is_declared():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = _declared(project["dependencies"])
    extras = {name: _declared(reqs) for name, reqs in project["optional-dependencies"].items()}
    everything = runtime | set().union(*extras.values())
    local = (
        {
            "gateway",
            "benchmarks",
            "support",
            "server",
            "policy_fakes",
            "loop_traces",
            "harness",
            "overhead",
            "scratch",
            "conftest",
        }
        | {p.stem for p in (ROOT / "tests").rglob("*.py")}
        | {p.stem for p in (ROOT / "benchmarks").glob("*.py")}
        | {p.parent.name for p in (ROOT / "tests").rglob("__init__.py")}
    )  # test packages: tests.pipeline.bodies
    for name, dists in _third_party(_imports(ROOT / "gateway"), local).items():
        declared = everything if name in OPTIONAL else runtime
        assert dists & declared, f"gateway imports {name} ({dists}) but it is not declared"
    for name, dists in _third_party(_imports(ROOT / "tests") | _imports(ROOT / "benchmarks"), local).items():
        assert dists & everything, f"tests import {name} ({dists}) but no extra declares it"
