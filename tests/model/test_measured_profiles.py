"""Machines measured by the benchmark as GPU profiles: the committed calibrated profiles
(benchmarks/results/*.toml) load into the catalog, can be a scenario's GPU — by link, by
CLI, in the dashboard — and are never offered as an alternative or priced."""

from __future__ import annotations

import io
import shutil

import pytest
from streamlit.testing.v1 import AppTest

from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.model.catalog import MEASURED_DIR, load_catalog, load_measured
from planner.model.scenario import Scenario
from planner.studies.advisor import findings
from planner.studies.compare import compare_gpus
from tests.paths import APP, HARDWARE_DIR
from ui import headline

COMMITTED = sorted(p.stem for p in MEASURED_DIR.glob("*.toml"))


def test_committed_measured_profiles_are_in_the_catalog(catalog):
    assert COMMITTED and sorted(catalog.measured) == COMMITTED
    assert not set(catalog.measured) & set(catalog.gpus)
    assert catalog.profile_keys()[-len(COMMITTED) :] == COMMITTED  # listed after the datasheet profiles
    for key in COMMITTED:
        g = catalog.profile(key)
        assert g.calibrated and g.price_per_gpu_hour_usd == 0.0 and g.compute_memory_overlap != 1.0


def test_a_missing_results_folder_is_no_problem(tmp_path):
    c = load_catalog(measured_dir=tmp_path / "none")
    assert c.measured == {} and not any("none" in p for p in c.problems)


def test_uncalibrated_or_clashing_measured_files_are_named_and_skipped(tmp_path):
    shutil.copy(HARDWARE_DIR / "h100-sxm.toml", tmp_path / "plain.toml")  # calibrated = false
    shutil.copy(MEASURED_DIR / f"{COMMITTED[0]}.toml", tmp_path / "h100-sxm.toml")  # a datasheet key
    shutil.copy(MEASURED_DIR / f"{COMMITTED[0]}.toml", tmp_path / "ok.toml")
    measured, problems = load_measured(tmp_path, {"h100-sxm"})
    assert set(measured) == {"ok"}
    assert any(p.startswith("plain.toml:") and "calibrated" in p for p in problems)
    assert any(p.startswith("h100-sxm.toml:") and "datasheet" in p for p in problems)


def test_a_link_can_plan_on_a_measured_machine(catalog):
    key = COMMITTED[-1]
    out, err = io.StringIO(), io.StringIO()
    assert main(["evaluate", f"gpu={key}&tp=1&model=qwen2.5-0.5b", "--format", "json"], out=out, err=err) == 0, (
        err.getvalue()
    )
    r = evaluate(Scenario(gpu=key, model="qwen2.5-0.5b"), catalog)
    assert float(r.inputs.compute_memory_overlap) == catalog.measured[key].compute_memory_overlap
    with pytest.raises(ScenarioError, match=key):  # the error lists the measured keys among the choices
        evaluate(Scenario(gpu="no-such-gpu"), catalog)
    listing = io.StringIO()
    main(["gpus"], out=listing, err=io.StringIO())
    assert f"[measured: benchmarks/results/{key}.toml]" in listing.getvalue()


def test_compare_shows_the_measured_machine_unpriced_and_never_cheapest(catalog):
    key = COMMITTED[-1]
    s = Scenario(gpu=key, model="qwen2.5-0.5b", slo_itl_s=10.0, slo_ttft_s=100.0)
    frame = compare_gpus(s, catalog)
    assert list(frame.gpu) == [*sorted(catalog.gpus), key]
    row = frame[frame.gpu == key].iloc[0]
    assert row.cost_per_million_output_tokens_usd is None or str(row.cost_per_million_output_tokens_usd) == "<NA>"
    assert "not priced" in row.note and not row.cheapest_meeting_slo
    assert frame.cheapest_meeting_slo.sum() == 1
    other = [f for f in findings(s, catalog) if f.id == "cheaper-gpu"]
    assert other == []  # an unpriced machine is not "more expensive" than anything
    assert key not in set(compare_gpus(Scenario(), catalog).gpu)  # not a row unless it is the scenario's GPU


def test_headline_says_not_priced(catalog):
    key = COMMITTED[-1]
    r = evaluate(Scenario(gpu=key, model="qwen2.5-0.5b"), catalog)
    cost = next(h for h in headline.headline_items(r, None) if h.key == "cost")
    assert cost.value == "not priced" and "GPU price" in cost.help


def test_crosscheck_plans_with_the_measured_machine():
    at = AppTest.from_file(APP, default_timeout=60)
    at.session_state["_tab"] = "Cross-check"
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    key = at.selectbox(key="xc_file").value.removesuffix(".json")
    at.button(key="xc_use_measured").click().run()
    assert not at.exception, [e.message for e in at.exception]
    q = at.query_params
    assert q["gpu"] == key and "mfu" not in q and "mbu" not in q  # a measured profile is not derated
    assert any("runs on this measured machine" in s.value for s in at.success)
    assert any("M output tokens" in m.label and m.value == "not priced" for m in at.metric)
    assert any("runs at MFU = MBU = 1" in c.value for c in at.sidebar.caption)


def test_a_measured_profile_is_not_derated_by_mfu_and_mbu(catalog):
    key = COMMITTED[-1]
    at_defaults = evaluate(Scenario(gpu=key, model="qwen2.5-0.5b"), catalog)
    at_one = evaluate(Scenario(gpu=key, model="qwen2.5-0.5b", mfu=1.0, mbu=1.0), catalog)
    assert float(at_defaults.inputs.mfu) == float(at_defaults.inputs.mbu) == 1.0
    assert float(at_defaults.metrics["tpot_s"]) == float(at_one.metrics["tpot_s"])
    # … while the scenario's MFU/MBU still derate the datasheet GPUs in the comparison
    frame = compare_gpus(Scenario(gpu=key, model="qwen2.5-0.5b", mbu=0.35), catalog)
    base = compare_gpus(Scenario(gpu=key, model="qwen2.5-0.5b", mbu=0.7), catalog)
    h100 = lambda f: float(f[f.gpu == "h100-sxm"].tpot_s.iloc[0])  # noqa: E731
    mine = lambda f: float(f[f.gpu == key].tpot_s.iloc[0])  # noqa: E731
    assert h100(frame) > h100(base) and mine(frame) == mine(base)
