"""kvplan is a package people can install: the wheel carries the engine, the dashboard and the data,
and its `kvplan` script answers from any directory exactly like `python -m planner` in the checkout."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.model.catalog import USER_FOLDERS
from tests.paths import ROOT

LINK = "gpu=h200&model=llama-3.1-70b&tp=2"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # build from a copy: setuptools writes build/ and *.egg-info beside the sources
    src = tmp_path_factory.mktemp("src") / "kvplan"
    skip = shutil.ignore_patterns(".git", ".venv", "build", "*.egg-info", "test-artifacts", "*_cache", "__pycache__")
    shutil.copytree(ROOT, src, ignore=skip)
    p = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0 and "Could not find a version that satisfies" in p.stderr:
        pytest.skip("no package index reachable to fetch the build backend")
    assert p.returncode == 0, p.stderr
    (found,) = out.glob("kvplan-*.whl")
    return found


def test_wheel_carries_code_data_and_dashboard(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for required in (
        "planner/data/hardware_profiles/h100-sxm.toml",
        "planner/data/model_presets/llama-3.1-8b.toml",
        "planner/data/engine_profiles/vllm/0.19.toml",
        "planner/data/engine_profiles/vllm/0.33.toml",
        "planner/data/engine_profiles/vllm/0.33-flags.json",  # each version's flag table (planner.model.engine_flags)
        "planner/data/engine_profiles/sglang/0.5.23-flags.json",
        "planner/data/traces/mooncake-conversation.jsonl.gz",
        "planner/data/examples/usage_log_example.jsonl",
        "planner/data/kernel_tables/h100-sxm/vllm-0.24.0.npz",
        "planner/data/kernel_tables/NOTICE",
        "planner/data/kernel_tables/LICENSE-aiconfigurator-Apache-2.0.txt",
        "planner/cli/server.toml",
        "planner/cli/main.py",
        "ui/app.py",
    ):
        assert required in names
    assert not any(n.startswith(("tests/", "benchmarks/")) for n in names)


def test_installed_script_answers_from_any_directory(wheel, tmp_path):
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)], check=True
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    p = subprocess.run(
        [str(site / "bin" / "kvplan"), "evaluate", LINK, "--format", "json"],
        capture_output=True, text=True, cwd="/", env=env, check=True,
    )  # fmt: skip
    here = io.StringIO()
    assert main(["evaluate", LINK, "--format", "json"], out=here) == 0
    assert p.stdout == here.getvalue()
    listed = subprocess.run(
        [str(site / "bin" / "kvplan"), "gpus"], capture_output=True, text=True, cwd="/", env=env, check=True
    ).stdout  # fmt: skip
    missing = [f.stem for f in (ROOT / "hardware_profiles").glob("*.toml") if f"  {f.stem} " not in listed]
    assert missing == [] and "skipped" not in listed


def test_the_build_copies_every_user_folder():
    """setup.py's folder list is the catalog's (``USER_FOLDERS``), and each folder is in the wheel."""
    import ast

    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    (assign,) = [
        n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "USER_FOLDERS"
    ]
    assert ast.literal_eval(assign.value) == USER_FOLDERS


def _requirements(name: str) -> list[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_requirements_files_match_the_project_metadata():
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert _requirements("requirements.txt") == project["dependencies"]
    assert _requirements("requirements-dev.txt") == project["optional-dependencies"]["dev"]
