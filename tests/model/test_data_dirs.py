"""Where the hand-edited data lives (issue 25): hardware_profiles/, model_presets/ and engine_profiles/ at the
top of the checkout; a TOML dropped there is in `kvplan gpus` and the dashboard's GPU list on the next start;
``KVPLAN_DATA_DIR`` adds a folder of the same shape for an installed kvplan."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.model import catalog as cat
from planner.model.catalog import DATA_DIR_ENV, HARDWARE_PROFILES, USER_FOLDERS, load_catalog, shipped_dir
from tests.paths import APP, ENGINE_DIR, HARDWARE_DIR, MODEL_DIR, ROOT
from ui import app as ui_app

LAB = "lab-h100"


def _lab_profile(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    text = (HARDWARE_DIR / "h100-sxm.toml").read_text(encoding="utf-8")
    (folder / f"{LAB}.toml").write_text(text.replace('name = "', 'name = "Lab ', 1), encoding="utf-8")


def test_a_checkout_reads_the_top_level_folders():
    assert [Path(str(shipped_dir(f))) for f in USER_FOLDERS] == [HARDWARE_DIR, MODEL_DIR, ENGINE_DIR]
    for folder in USER_FOLDERS:
        assert not (ROOT / "planner" / "data" / folder).exists(), "one copy only: the top-level folder"


def test_a_profile_dropped_into_the_checkouts_folder_is_listed(tmp_path):
    """A copy of the checkout with one more TOML in hardware_profiles/: `python -m planner gpus` lists it."""
    tree = tmp_path / "kvplan"
    for part in ("planner", *USER_FOLDERS):
        shutil.copytree(ROOT / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    _lab_profile(tree / HARDWARE_PROFILES)
    p = subprocess.run(
        [sys.executable, "-m", "planner", "gpus"], capture_output=True, text=True, cwd=tree, check=True
    )  # fmt: skip
    assert LAB in p.stdout and "Lab NVIDIA H100" in p.stdout
    for key in (p.stem for p in HARDWARE_DIR.glob("*.toml")):
        assert key in p.stdout


def test_the_extra_folder_adds_and_replaces(tmp_path, monkeypatch):
    _lab_profile(tmp_path / HARDWARE_PROFILES)
    text = (HARDWARE_DIR / "l4.toml").read_text(encoding="utf-8")
    (tmp_path / HARDWARE_PROFILES / "l4.toml").write_text(text.replace('name = "', 'name = "Our ', 1))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    c = load_catalog()
    assert LAB in c.gpus and c.gpus["l4"].name.startswith("Our ")
    assert {p.stem for p in HARDWARE_DIR.glob("*.toml")} <= set(c.gpus)
    assert c.problems == ()  # the extra folder need not hold every sub-folder


def test_an_extra_folder_that_does_not_exist_is_said_once(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "nowhere"))
    c = load_catalog()
    assert [p for p in c.problems if DATA_DIR_ENV in p] == [f"{DATA_DIR_ENV}={tmp_path / 'nowhere'}: folder not found"]
    assert "h100-sxm" in c.gpus


def test_a_bad_file_in_the_extra_folder_is_named_with_its_folder(tmp_path, monkeypatch):
    (tmp_path / HARDWARE_PROFILES).mkdir()
    (tmp_path / HARDWARE_PROFILES / "broken.toml").write_text("memory_gb = [", encoding="utf-8")
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    problems = load_catalog().problems
    assert any(str(tmp_path / HARDWARE_PROFILES) in p and "broken.toml" in p for p in problems), problems


@pytest.fixture
def fresh_catalog():
    ui_app.catalog.clear()
    yield
    ui_app.catalog.clear()


def test_the_dashboard_lists_a_dropped_profile(tmp_path, monkeypatch, fresh_catalog):
    _lab_profile(tmp_path / HARDWARE_PROFILES)
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(o.startswith("Lab NVIDIA H100 SXM ·") for o in at.sidebar.selectbox(key="gpu").options)  # name first
    at.sidebar.selectbox(key="gpu").set_value(LAB).run()
    assert not at.exception and at.query_params["gpu"] == LAB


def test_no_module_reads_the_folders_at_import_time():
    assert not hasattr(cat, "HARDWARE_DIR") and not hasattr(cat, "MODEL_DIR")
