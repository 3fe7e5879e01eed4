"""The layering holds: planner/ is pure (numpy, pandas, pydantic), ui/ is the only presentation layer."""

from __future__ import annotations

import ast
import subprocess
import sys

from tests.paths import ROOT

PRESENTATION = ("streamlit", "plotly")


def test_planner_imports_no_ui_plotly_or_torch():
    """Importing every planner module loads neither streamlit, plotly nor torch."""
    code = (
        "import sys, importlib, pkgutil, planner\n"
        "for m in pkgutil.walk_packages(planner.__path__, 'planner.'):\n"
        "    if m.name != 'planner.__main__':\n"
        "        importlib.import_module(m.name)\n"
        "bad = [n for n in ('streamlit', 'plotly', 'torch', 'ui') if n in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""


def _imported_roots(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


def test_only_ui_and_app_import_streamlit_or_plotly():
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in (".venv", "tests", "benchmarks", "ui") or rel.as_posix() == "app.py":
            continue
        if _imported_roots(path) & set(PRESENTATION):
            offenders.append(str(rel))
    assert offenders == []


def test_planner_never_imports_ui():
    offenders = [str(p.relative_to(ROOT)) for p in (ROOT / "planner").rglob("*.py") if "ui" in _imported_roots(p)]
    assert offenders == []
