"""The architecture holds: no import cycle in planner/ or ui/, the simulator below the search, and small
modules and functions (docs/architecture.md)."""

from __future__ import annotations

import ast
import re

import pytest

from tests.import_graph import box_graph, cycles, import_graph, modules, transitive_reduction
from tests.paths import ROOT

PACKAGES = ("planner", "ui")
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(modules(ROOT, PACKAGES))


def _cycle_text(found: list[list[str]]) -> str:
    return "; ".join(" → ".join(c) for c in found)


def test_no_import_cycle(graph):
    found = cycles(graph)
    assert not found, f"import cycles: {_cycle_text(found)}"


def test_a_planted_cycle_is_found_and_named(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.sub import b\n")
    (pkg / "sub" / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..c import x\n")
    (pkg / "c.py").write_text("def f():\n    import pkg.a\n")
    (pkg / "d.py").write_text("from pkg import a\n")  # imports into the cycle, not part of it
    found = cycles(import_graph(modules(tmp_path, ["pkg"])))
    assert found == [["pkg.a", "pkg.sub.b", "pkg.c", "pkg.a"]], _cycle_text(found)


def test_the_simulator_never_imports_the_search(graph):
    offenders = sorted(
        f"{m} → {t}"
        for m, ts in graph.items()
        if m.startswith("planner.sim")
        for t in ts
        if t.startswith("planner.search")
    )
    assert offenders == []


def test_modules_and_functions_stay_small():
    big = []
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            text = path.read_text(encoding="utf-8")
            rel = path.relative_to(ROOT)
            if (n := len(text.splitlines())) > MAX_MODULE_LINES:
                big.append(f"{rel}: {n} lines")
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    length = (node.end_lineno or node.lineno) - node.lineno + 1
                    if length > MAX_FUNCTION_LINES:
                        big.append(f"{rel}:{node.lineno} {node.name}: {length} lines")
    assert big == [], f"over {MAX_MODULE_LINES} lines a module or {MAX_FUNCTION_LINES} a function: {big}"


def _picture() -> tuple[set[str], set[tuple[str, str]]]:
    """The boxes and the solid arrows (``a --> b``) of docs/architecture.md's diagram."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    diagram = text.split("```mermaid", 1)[1].split("```", 1)[0]
    nodes = set(re.findall(r"^\s*(\w+)\[\"", diagram, flags=re.M))  # boxes; files[( … )] is data, not code
    arrows = set(re.findall(r"^\s*(\w+) --> (\w+)\s*$", diagram, flags=re.M))
    return nodes, arrows


def test_the_architecture_picture_is_the_code(graph):
    """Each solid arrow of the picture is an import the code has, and each package import the code has is an
    arrow or follows from a path of arrows (the picture is the transitive reduction of the package graph)."""
    boxes = box_graph(graph)
    nodes, arrows = _picture()
    assert nodes == set(boxes), (
        f"boxes only in the picture: {nodes - set(boxes)}; only in the code: {set(boxes) - nodes}"
    )
    reduced = transitive_reduction(boxes)
    assert arrows == reduced, (
        f"missing from the picture: {sorted(reduced - arrows)}; not in the code: {sorted(arrows - reduced)}"
    )
