"""Paths the tests need: the checkout's root, the dashboard entry point, the package data."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA = ROOT / "planner" / "data"
