"""``--out`` (issue 31 F5, F10): a folder, a missing folder or a full disk was a traceback; an existing file
was overwritten and a symbolic link followed without a word; ``kvplan bench`` without ``--out`` made
./benchmarks/results/quick/ wherever it ran.  Each reproducer from its own input, through the CLI."""

from __future__ import annotations

import errno
import io
import json

import pytest

from planner import outfile
from planner.cli.main import main
from tests.calibration.test_calibration import vllm_result

PARETO = ["pareto", "rate=2", "--search", "none"]


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    assert "Traceback" not in err.getvalue()
    return code, out.getvalue(), err.getvalue()


def _commands(tmp_path, target: str) -> list[list[str]]:
    result = tmp_path / "run.json"
    result.write_text(json.dumps(vllm_result(8, 4.0, 50.0, 12.0, 2000.0)), encoding="utf-8")
    return [
        [*PARETO, "--out", target],
        ["sweep", "", "--set", "batch=1,2", "--out", target],
        ["calibrate", str(result), "--link", "gpu=h100-sxm&model=llama-3.1-8b", "--out", target],
    ]


def test_f5_a_folder_is_refused_by_every_command(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "some_dir").mkdir()
    for argv in _commands(tmp_path, "some_dir/"):
        code, _, err = run(*argv)
        assert (
            code == 2 and err == "error: --out some_dir/: is a folder; give a file name in it (e.g. some_dir/out.csv)\n"
        )
    code, _, err = run(*PARETO, "--out", "some_dir")
    assert code == 2 and "is a folder" in err
    assert list((tmp_path / "some_dir").iterdir()) == []


def test_f5_a_missing_folder_is_refused_before_the_work(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for argv in _commands(tmp_path, "missing/points.csv"):
        code, _, err = run(*argv)
        assert (
            code == 2 and err == "error: --out missing/points.csv: the folder missing does not exist; create it first\n"
        )
    assert not (tmp_path / "missing").exists()


def test_f5_a_full_disk_is_a_message_and_the_old_file_stays(tmp_path, monkeypatch):
    target = tmp_path / "points.csv"
    target.write_text("keep\n")
    real = outfile.os.replace

    def full(src, dst):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(outfile.os, "replace", full)
    code, _, err = run(*PARETO, "--out", str(target), "--force")
    monkeypatch.setattr(outfile.os, "replace", real)
    assert (
        code == 2 and err == f"error: --out {target}: cannot write it (No space left on device); nothing was written\n"
    )
    assert target.read_text() == "keep\n" and [p.name for p in tmp_path.iterdir()] == ["points.csv"]


def test_f10_an_existing_file_needs_force(tmp_path, monkeypatch):
    """`echo keep > x.txt; kvplan pareto "rate=2" --search none --out x.txt`."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.txt").write_text("keep\n")
    for argv in _commands(tmp_path, "x.txt"):
        code, _, err = run(*argv)
        assert code == 2 and err == "error: --out x.txt: already exists; add --force to overwrite it\n"
        assert (tmp_path / "x.txt").read_text() == "keep\n"
    for argv in _commands(tmp_path, "x.txt"):
        code, _, err = run(*argv, "--force")
        assert code == 0, err
        assert (tmp_path / "x.txt").read_text() != "keep\n"


def test_f10_a_link_out_of_the_folder_is_never_followed(tmp_path):
    outside, folder = tmp_path / "outside", tmp_path / "out"
    outside.mkdir()
    folder.mkdir()
    victim = outside / "victim.txt"
    victim.write_text("keep\n")
    link = folder / "points.csv"
    link.symlink_to(victim)
    for force in ((), ("--force",)):
        code, _, err = run(*PARETO, "--out", str(link), *force)
        assert code == 2 and "a symbolic link to" in err and "outside" in err
    assert victim.read_text() == "keep\n"
    inside = folder / "old.csv"
    inside.write_text("old\n")
    near = folder / "near.csv"
    near.symlink_to("old.csv")  # a link within the folder: an existing name (replaced, never written through)
    assert run(*PARETO, "--out", str(near))[0] == 2
    assert run(*PARETO, "--out", str(near), "--force")[0] == 0
    assert inside.read_text() == "old\n" and not near.is_symlink() and near.read_text().startswith("point,")


def test_f10_bench_without_out_creates_nothing_where_it_runs(tmp_path, monkeypatch):
    from planner.bench import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "checkout_results_dir", lambda: None)  # an installed kvplan: no checkout around it
    code, _, err = run("bench", "--backend", "numpy", "--quick")
    assert code == 2 and "--out DIR is required" in err
    assert list(tmp_path.iterdir()) == []


def test_f10_bench_defaults_only_inside_its_own_checkout(monkeypatch, tmp_path):
    from planner.bench import cli
    from planner.model.catalog import CHECKOUT

    results = cli.checkout_results_dir()
    assert results is not None and results.is_absolute() and results.parent.parent == CHECKOUT
    monkeypatch.chdir(tmp_path)
    assert cli.default_out_dir(quick=True) == results / "quick"  # the checkout's, not ./benchmarks/…


def test_bench_refuses_to_overwrite_its_files_without_force(tmp_path):
    first = run("bench", "--device", "cpu", "--backend", "numpy", "--quick", "--out", str(tmp_path))
    assert first[0] == 0, first[2]
    code, _, err = run("bench", "--device", "cpu", "--backend", "numpy", "--quick", "--out", str(tmp_path))
    assert code == 2 and "already exists; add --force" in err


@pytest.mark.parametrize("name", ["a\x7fb.json"])
def test_f9_calibrate_out_keeps_a_del_in_the_file_name(tmp_path, catalog, name):
    """`kvplan calibrate $'a\\x7fb.json' … --out p.toml`: the TOML reads back with the name in it."""
    from planner.model.catalog import parse_engine_toml
    from tests.calibration.test_calibration import _as_vllm, _synthetic_runs

    runs, _ = _synthetic_runs(catalog)
    files = []
    for k, r in enumerate(runs):
        path = tmp_path / f"{k}{name}"
        path.write_text(json.dumps(_as_vllm(r)), encoding="utf-8")
        files.append(str(path))
    code, _, err = run(
        "calibrate", *files, "--link", "gpu=h100-sxm&model=llama-3.1-8b", "--out", str(tmp_path / "p.toml")
    )
    assert code == 0, err
    profile = parse_engine_toml((tmp_path / "p.toml").read_text(encoding="utf-8"), "p")
    assert "0a\x7fb.json" in profile.notes and "\x7f" in profile.timing.source
