"""Paths the tests need: the checkout's root, the dashboard entry point, the package data and the
hand-edited data folders."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
DATA = ROOT / "planner" / "data"
#: the hand-edited folders at the top of the checkout (planner.model.catalog.USER_FOLDERS)
HARDWARE_DIR = ROOT / "hardware_profiles"
MODEL_DIR = ROOT / "model_presets"
ENGINE_DIR = ROOT / "engine_profiles"
