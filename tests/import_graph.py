"""The import graph of a source tree, read from the code (``ast``), and its cycles.

Every import counts: module level, inside functions and under ``TYPE_CHECKING`` alike — a cycle
through a type-only import still means neither module can be read or changed alone.  ``from a.b
import c`` is an edge to ``a.b.c`` when that is a module, else to ``a.b``; relative imports are
resolved against the importing module's package.  A package's ``__init__`` counts as the module
named by the package.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path


def modules(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name → file, for every ``*.py`` under ``root/<package>``."""
    found: dict[str, Path] = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that ``name`` is or lies inside (``None``: outside the tree)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def import_graph(known: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the modules of the tree it imports (itself excluded)."""
    graph: dict[str, set[str]] = {m: set() for m in known}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for target in _targets(node, module, path.name == "__init__.py", known):
                resolved = _resolve(target, known)
                if resolved and resolved != module:
                    graph[module].add(resolved)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected set of more than one module, as one cycle through it (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                group = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    group.append(w)
                    if w == v:
                        break
                if len(group) > 1:
                    found.append(_cycle_through(sorted(group), graph))
    return found


def _cycle_through(group: list[str], graph: dict[str, set[str]]) -> list[str]:
    """One closed path a → … → a inside ``group`` (breadth-first from its first module)."""
    members, start = set(group), group[0]
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [start, v, start]
                if w not in came:
                    came[w] = v
                    nxt.append(w)
        frontier = nxt
    return group


#: planner's base modules: they import no other planner package (docs/architecture.md's "base" box).
BASE_MODULES = {"planner.units", "planner.errors", "planner.format", "planner.tomlfile", "planner.outfile"}


def box(module: str) -> str:
    """The box of docs/architecture.md's picture a module belongs to (a package, or a named group of modules)."""
    parts = module.split(".")
    if module in ("planner", "planner.__main__"):
        return "api"
    if module in BASE_MODULES:
        return "base"
    if module in ("planner.links", "planner.export"):
        return "links"
    if parts[0] == "ui":
        if module == "ui.app":
            return "ui_app"
        return f"ui_{parts[1]}" if len(parts) > 1 and parts[1] in ("sidebar", "figures", "tabs") else "ui_base"
    return parts[1]


def box_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed to ``box``es (an edge between two boxes when any of their modules import)."""
    boxes: dict[str, set[str]] = {}
    for module, targets in graph.items():
        a = box(module)
        boxes.setdefault(a, set())
        for target in targets:
            if (b := box(target)) != a:
                boxes[a].add(b)
    return boxes


def transitive_reduction(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The edges a → b of an acyclic ``graph`` that no longer path a → … → b implies (unique for a DAG)."""

    def reach(start: str, skip: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        todo = [t for t in graph.get(start, ()) if (start, t) != skip]
        while todo:
            v = todo.pop()
            if v not in seen:
                seen.add(v)
                todo.extend(graph.get(v, ()))
        return seen

    return {(a, b) for a, ts in graph.items() for b in ts if b not in reach(a, (a, b))}
