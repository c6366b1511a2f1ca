"""The gateway's packages stand in floors: a module imports only from its own floor's package
or from floors below it, never from one above, and no two packages import each other.

The floors are the list drawn in docs/architecture.md ("Import layers"): the test reads them
from there, so the picture a newcomer reads is the rule the code is held to. Every package and
top-level module of ``gateway`` must stand on a floor: a new one is placed in the picture first.
Within a package, modules import each other without a cycle too.

Imports are read by grimp from the source, every one of them: at module level, inside functions
and under ``TYPE_CHECKING`` (a type named in a signature is a dependency all the same).
"""

from __future__ import annotations

import re
from pathlib import Path

import grimp
import pytest

import gateway

ROOT = Path(gateway.__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
MARKER = "<!-- import-layers: read by tests/protocols/test_layers.py -->"


def floors(text: str) -> list[tuple[str, ...]]:
    """The floors drawn after the marker, top first: one a line, siblings split by ``|``, a
    description after two spaces."""
    block = text.partition(MARKER)[2].partition("```text\n")[2].partition("```")[0]
    found = []
    for line in block.splitlines():
        names = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
        if names:
            found.append(tuple(n.strip() for n in names.split("|")))
    return found


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("gateway", include_external_packages=False, cache_dir=None)


@pytest.fixture(scope="module")
def layers() -> list[tuple[str, ...]]:
    return floors(DOC.read_text(encoding="utf-8"))


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_picture_names_every_package_once(graph, layers):
    drawn = [name for floor in layers for name in floor]
    assert len(drawn) == len(set(drawn)), f"named twice: {sorted({n for n in drawn if drawn.count(n) > 1})}"
    children = {child.removeprefix("gateway.") for child in graph.find_children("gateway")}
    assert sorted(children - set(drawn)) == [], "packages on no floor: add them to the picture"
    assert sorted(set(drawn) - children) == [], "the picture names packages that do not exist"


def test_no_import_runs_up_the_floors_or_across_one(graph, layers):
    """Siblings on one floor import neither each other; a lower floor never imports a higher."""
    illegal = graph.find_illegal_dependencies_for_layers(
        layers=[grimp.Layer(*floor, independent=True) for floor in layers], containers={"gateway"}
    )
    found = sorted(
        f"{dep.importer} imports {dep.imported}: {sorted(route.heads)} ... {sorted(route.tails)}"
        for dep in illegal
        for route in dep.routes
    )
    assert found == []


def test_no_two_packages_import_each_other(graph):
    """Redundant with the floors while every package stands on one; kept as the plain rule."""
    assert graph.nominate_cycle_breakers("gateway") == set()


@pytest.fixture(scope="module")
def runtime_graph() -> grimp.ImportGraph:
    """The imports that run: one under ``if TYPE_CHECKING:`` only names a type for the checker
    (a stage's function annotated with the exchange that holds the stage's record), so it can
    close no import-order loop. Floors are judged on every import, these included."""
    return grimp.build_graph(
        "gateway", include_external_packages=False, exclude_type_checking_imports=True, cache_dir=None
    )


def test_no_module_cycle_inside_a_package(runtime_graph):
    cycles = _module_cycles(runtime_graph)
    assert cycles == [], "modules importing each other, directly or around a loop"


def _module_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected groups of more than one module within one package (Tarjan)."""
    edges = {
        m: [i for i in graph.find_modules_directly_imported_by(m) if _package(i) == _package(m)] for m in graph.modules
    }
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(root: str) -> None:
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))

    for module in sorted(edges):
        if module not in index:
            visit(module)
    return sorted(groups)


def test_the_reader_of_the_picture():
    text = f"x\n{MARKER}\n```text\ncli            the command\nserver | web  two\n\nwire\n```\n"
    assert floors(text) == [("cli",), ("server", "web"), ("wire",)]
