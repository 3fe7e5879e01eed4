"""``kvplan deploy``: the bundle written into --out exactly, bad input refused with the reason (exit 2, no
traceback), and nothing written where the user did not ask (planner/outfile.py, write_folder)."""

from __future__ import annotations

import io
import os
import zipfile

from planner.cli.main import main
from planner.deploy.bundle import deploy_bundle
from planner.errors import EXIT_BAD_INPUT
from tests.deploy.plans import PLANS, plan


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_deploy_writes_the_bundle_into_the_folder(catalog, tmp_path):
    out = tmp_path / "k8s"
    code, text, err = run("deploy", PLANS["disaggregated"], "--target", "kubernetes", "--out", str(out))
    assert code == 0, err
    bundle = deploy_bundle(plan("disaggregated"), catalog, "kubernetes")
    assert sorted(p.name for p in out.iterdir()) == sorted(bundle.files)
    for name, body in bundle.files.items():
        assert (out / name).read_text(encoding="utf-8") == body
    assert "prefill 1 × tp4; decode 2 × tp2, 8 GPUs; wrote 5 files" in text
    shell = tmp_path / "sh"
    assert run("deploy", PLANS["mi300x"], "--target", "shell", "--out", str(shell), "--engine", "sglang")[0] == 0
    assert all(os.access(p, os.X_OK) for p in shell.glob("*.sh"))
    assert not os.access(shell / "README.md", os.X_OK)


def test_a_non_empty_folder_needs_force_and_force_touches_only_the_bundles_files(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    code, _, err = run("deploy", PLANS["mi300x"], "--out", str(out))
    assert code == EXIT_BAD_INPUT and "not empty (1 entries: mine.txt); pass --force" in err
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]
    assert run("deploy", PLANS["mi300x"], "--out", str(out), "--force")[0] == 0
    assert (out / "mine.txt").read_text() == "keep" and (out / "README.md").exists()


def test_never_writes_through_a_symlink(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "README.md"
    target.write_text("not yours")
    out = tmp_path / "out"
    out.mkdir()
    (out / "README.md").symlink_to(target)  # a planted link named like a bundle file
    assert run("deploy", PLANS["mi300x"], "--out", str(out), "--force")[0] == 0
    assert target.read_text() == "not yours" and not (out / "README.md").is_symlink()
    link = tmp_path / "link"
    link.symlink_to(outside, target_is_directory=True)
    code, _, err = run("deploy", PLANS["mi300x"], "--out", str(link), "--force")
    assert code == EXIT_BAD_INPUT and "a symbolic link" in err
    assert sorted(p.name for p in outside.iterdir()) == ["README.md"]


def test_bad_input_is_refused_with_the_reason_and_writes_nothing(tmp_path):
    cases = [
        ("gpu=h100-sxm&model=llama-3.1-405b&tp=1", "does not fit", ["--out", str(tmp_path / "a")]),
        (PLANS["two-node-pp2"], "writes one node", ["--target", "compose", "--out", str(tmp_path / "b")]),
        ("model=llama-3.1-8b", "parent folder", ["--out", str(tmp_path / "no" / "such")]),
        ("gpu=h100-sxm&model=llama-3.1-8b&tp=3", "tp=3", ["--out", str(tmp_path / "c")]),
    ]
    for link, reason, extra in cases:
        code, out, err = run("deploy", link, *extra)
        assert code == EXIT_BAD_INPUT and reason in err and "Traceback" not in err, err
    (tmp_path / "file").write_text("x")
    code, _, err = run("deploy", "model=llama-3.1-8b", "--out", str(tmp_path / "file"))
    assert code == EXIT_BAD_INPUT and "not a folder" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # no folder made for a refused plan


def test_the_zip_holds_the_same_files_and_is_the_same_bytes_each_time(catalog):
    bundle = deploy_bundle(plan("colocated-h100"), catalog, "compose")
    data = bundle.zip_bytes()
    assert data == deploy_bundle(plan("colocated-h100"), catalog, "compose").zip_bytes()
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        assert {n.removeprefix(f"{bundle.fleet.name}/"): z.read(n).decode() for n in z.namelist()} == bundle.files
    assert bundle.zip_name == "kvplan-llama-3-1-8b-compose.zip"
