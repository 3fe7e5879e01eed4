"""The engine stays pure: importing planner pulls in neither streamlit nor torch."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import ROOT


def test_planner_imports_no_ui_or_torch():
    code = (
        "import sys, importlib, pkgutil, planner\n"
        "for m in pkgutil.walk_packages(planner.__path__, 'planner.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = [n for n in ('streamlit', 'torch') if n in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""


def test_only_app_py_imports_streamlit():
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in (".venv", "tests", "benchmarks") or rel.name == "app.py":
            continue
        text = path.read_text(encoding="utf-8")
        if "import streamlit" in text or "from streamlit" in text:
            offenders.append(str(rel))
    assert offenders == []
