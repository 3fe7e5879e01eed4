"""The sizing search over parallel layouts (issue 15 × issue 17): the grid tries sizing's layouts per GPU
(``grid.grid_layouts`` = ``layouts.sizing_layouts``), times them with ``step_grid.LayoutStepModel``
(= ``roofline.step_cost``) and plans their memory per pipeline stage (= ``memory.memory_plan``);
DeepSeek-V3 on H100 SXM is sized on two-node layouts, confirmed by simulation."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.kv_fit import kv_fit
from planner.engine.memory import memory_plan
from planner.engine.roofline import decode, step_cost
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.search.grid import BATCHES, CHUNKS, Space, _take, bases, parallel_layouts
from planner.search.knob_search import MEETS, search_fleet, search_text
from planner.search.layouts import grid_layouts
from planner.search.replicas import accepted_tps
from planner.search.step_grid import LayoutStepModel, MeasuredStepModel, StepModel, step_model
from planner.sim.simulate import sim_inputs
from tests.search.test_search import assert_kv_plan_is_the_memory_plan

DSV3 = Scenario(model="deepseek-v3", wdtype="fp8", quant="fp8-block", gpu="h100-sxm", prompt=1024, output=128)
TWO_NODE = {"tp16", "tp8·pp2", "tp16·ep16", "tp8·pp2·ep8"}


@pytest.fixture(scope="module")
def dsv3_search(catalog):
    return search_fleet(DSV3.with_changes(rate=2.0, sim_requests=60), catalog, gpus=["h100-sxm"], workers=1)


def test_deepseek_v3_search_lists_two_node_layouts_with_their_communication_share(dsv3_search):
    """Must show (issue 15): the sizing table for DeepSeek-V3 at a given rate lists multi-node layouts with
    their communication share of the step — now through the default search, confirmed by simulation."""
    table = dsv3_search.table
    assert len(table) and dsv3_search.best is not None
    assert set(table["layout"]) <= TWO_NODE and (table["nodes"] == 2).all()
    assert (table["gpus_per_replica"] == 16).all()
    ok = table[table["status"] == MEETS]
    assert len(ok) and ((ok["decode_comm_frac"] > 0) & (ok["decode_comm_frac"] < 1)).all()
    assert (ok["simulations"] > 0).all() and (ok["gpus"] == ok["replicas"] * 16).all()
    # fp8 DeepSeek-V3 (~700 GB) does not fit one 8 × 80 GB node: no one-node point meets the SLO
    points = dsv3_search.points
    assert not points[(points["nodes"] == 1) & points["meets_slo"]].size
    text = search_text(dsv3_search)
    header = next(line for line in text.splitlines() if line.startswith("GPU"))
    assert header.split()[:4] == ["GPU", "layout", "nodes", "mode"] and "comm" in header.split()
    best = next(line for line in text.splitlines() if line.endswith("← best"))
    assert best.split()[1] in TWO_NODE and best.split()[2] == "2" and "%" in best


def test_a_points_changes_set_its_layout(dsv3_search, catalog):
    best = dsv3_search.table.loc[dsv3_search.best]
    s = DSV3.with_changes(**dsv3_search.changes(int(best["point"])))
    assert Layout(tp=s.tp, pp=s.pp, ep=s.ep, dp=s.dp).label == best["layout"]
    assert s.batch == best["batch"] and s.chunk == best["chunk"] and s.replicas == best["replicas"]
    sim_inputs(s, catalog)  # the engine accepts it


def test_the_grid_tries_sizings_layouts_on_every_gpu(catalog):
    for s, gpus in ((DSV3, ["h100-sxm"]), (Scenario(model="llama-3.1-405b"), ["h100-sxm", "l40s"])):
        tps = accepted_tps(s, catalog, (1, 2, 4, 8))
        assert grid_layouts(s, catalog, gpus, tps) == {g: parallel_layouts(s, catalog, g) for g in gpus}
    h100 = parallel_layouts(DSV3, catalog, "h100-sxm")
    assert {"tp16", "tp8·pp2"} <= {lay.label for lay in h100}


def _layout_rows(s, catalog, gpus):
    space = Space.of(s)
    base_list, xb, _ = bases(s, catalog, gpus, space)
    assert xb is not None
    rows = np.array([i for i, b in enumerate(base_list) if b.layout.gpus > 8 or b.layout.dp > 1 or b.layout.pp > 1])
    return base_list, xb, rows


def test_the_grids_step_time_is_the_roofline_step_cost_for_layouts(catalog):
    base_list, xb, rows = _layout_rows(DSV3, catalog, ["h100-sxm"])
    labels = {base_list[i].layout.label for i in rows}
    assert {"tp8·pp2", "tp16"} <= labels and any("dp" in v for v in labels)
    x = _take(xb, rows, 1)
    assert isinstance(step_model(x), LayoutStepModel | MeasuredStepModel)
    rng = np.random.default_rng(5)
    for seqs, n in ((rng.integers(1, 600, rows.size), 0.0), (0.0, rng.integers(1, 8000, rows.size))):
        seqs, n = np.asarray(seqs, dtype=float), np.asarray(n, dtype=float)
        ctx, past = rng.uniform(1, 9000, rows.size), rng.uniform(0, 4000, rows.size)
        for q in (1.0, 3.0):
            ours = step_model(x).time_s(seqs, q, ctx, n, past)
            theirs = np.array(
                [
                    float(
                        step_cost(
                            _take(xb, rows[[k]], 1), seqs.flat[k % seqs.size], q, ctx[k], n.flat[k % n.size], past[k]
                        ).time_s[0]
                    )
                    for k in range(rows.size)
                ]
            )
            np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_the_layout_step_model_equals_the_plain_one_on_plain_layouts(catalog):
    _, x = sim_inputs(Scenario(model="qwen3-30b-a3b", tp=4), catalog)
    args = (np.array([1.0, 37.0, 0.0]), 2.0, np.array([900.0, 3000.0, 0.0]), np.array([0.0, 128.0, 2048.0]), 300.0)
    np.testing.assert_allclose(LayoutStepModel.of(x).time_s(*args), StepModel.of(x).time_s(*args), rtol=1e-12)


def test_kv_plan_equals_the_memory_plan_for_pipeline_and_data_parallel_layouts(catalog):
    base_list, xb, _ = _layout_rows(DSV3, catalog, ["h100-sxm"])
    rows = np.arange(len(base_list))  # plain and layout bases in one grid
    x = _take(xb, rows, 3).with_(
        batch=np.asarray(BATCHES, dtype=float)[None, :, None] * _take(xb, rows, 3).dp,
        chunk_tokens=np.asarray(CHUNKS, dtype=float)[None, None, :],
    )
    assert_kv_plan_is_the_memory_plan(x)
    for lay in (Layout(tp=8, pp=2), Layout(tp=1, dp=16, ep=16)):
        s = DSV3.with_changes(**lay.changes(), batch=64 * lay.dp)
        _, one = sim_inputs(s, catalog)
        ours = kv_fit(one)
        theirs = memory_plan(one)
        assert float(ours[0]) == float(theirs["kv_capacity_tokens"]) > 0 and bool(ours[1]) is bool(theirs["fits"])


def test_a_dp_points_batch_is_its_engines_times_dp_and_its_comm_is_the_decode_steps(catalog):
    from planner.search.grid import score
    from planner.search.knob_search import traffic_stats

    s = DSV3.with_changes(rate=2.0)
    z = score(s, catalog, traffic_stats(s, None), ["h100-sxm"])
    dp = z.points[z.points["dp"] > 1]
    assert len(dp) and set(dp["batch"] // dp["dp"]) == set(BATCHES)
    row = dp.iloc[0]
    changes = z.bases[int(row["base"])].changes | {"batch": int(row["batch"]), "chunk": int(row["chunk"])}
    _, x = sim_inputs(DSV3.with_changes(**changes), catalog)
    step = decode(x)
    assert row["decode_comm_frac"] == pytest.approx(float(step.comm_s / step.time_s), rel=1e-9)
