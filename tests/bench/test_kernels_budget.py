"""The microbenchmark's kernel table (planner.bench.kernels) and its time budget (planner.bench.budget):
the table a run writes loads through the kernel-table reader, names the device's GPU and every engine
("*"), and a run sized to a budget keeps every phase measured.  No timing is asserted: the budget is
checked by structure (the sizing arithmetic, a deadline that has passed)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.bench.budget import (
    MIN_CASES,
    Deadline,
    case_cost_s,
    size_to_budget,
)
from planner.bench.kernels import (
    KernelGrid,
    Sweep,
    coarse_first,
    decoder_linears,
    kernel_estimate,
    kernel_grid,
    kernel_table_meta,
    measure_kernels,
)
from planner.bench.plan import CPU_SHAPE, GPU_SHAPE, QUICK_SHAPE, make_plan
from planner.bench.predict import engine_inputs, predict_cases
from planner.bench.results import KernelTableData, parse_results, results_json
from planner.bench.run import essential_cases, measure_cases, run_bench, write_results
from planner.kernels.format import ANY_ENGINE, TABLE_SCHEMAS, read_table, table_file_name
from planner.model.catalog import load_catalog


@pytest.fixture(scope="module")
def quick():
    return run_bench("cpu", "numpy", quick=True, catalog=load_catalog())


def test_the_run_writes_a_kernel_table_the_reader_accepts(quick, tmp_path):
    k = quick.kernel_table
    assert k is not None and k.measured_cells == k.planned_cells > 0
    assert {t.name for t in k.tables} == {"gemm", "context_attention", "generation_attention"}  # one CPU: no all-reduce
    paths = write_results(quick, tmp_path)
    table = read_table(next(p for p in paths if p.name.endswith(".kernels.npz")))
    meta = table.meta
    assert (meta.gpu, meta.engine) == (quick.device.slug, ANY_ENGINE) and meta.engine_version == k.engine_version
    for name, t in table.tables.items():
        schema = TABLE_SCHEMAS[name]
        assert tuple(t.keys) == schema.keys and len(t.axes) == len(schema.axes)
        assert np.isfinite(t.latency_ms).all() and (t.latency_ms > 0).all()
    gemm = table.tables["gemm"]
    assert sorted(zip(gemm.keys["n"], gemm.keys["k"], strict=True)) == sorted(decoder_linears(QUICK_SHAPE))
    assert set(gemm.keys["dtype"]) == {"float32"}  # the CPU's own dtype: a scenario's bf16 GEMM never matches it
    att = table.tables["generation_attention"]
    assert (att.keys["heads"][0], att.keys["kv_heads"][0], att.keys["head_dim"][0]) == (4, 2, 32)
    # the results file carries the same cells (null where not measured) and reads back
    again = parse_results(results_json(quick))
    assert again.kernel_table == k
    ms = np.array(k.tables[0].latency_ms, dtype=float)
    assert np.allclose(ms, gemm.latency_ms, rtol=1e-3)  # float16 in the .npz: 10 mantissa bits


def test_a_matched_gpu_is_the_tables_gpu_and_found_before_the_shipped_ones(quick):
    """On an H100 the table is h100-sxm's: engine "*" is the first table a scenario reads (docs/kernel_tables.md)."""
    k = quick.kernel_table.model_copy(update={"gpu": "h100-sxm"})
    meta = kernel_table_meta(k)
    assert meta.identity == ("h100-sxm", ANY_ENGINE, k.engine_version)
    assert table_file_name(meta) == f"h100-sxm/any-{k.engine_version}.npz"


def test_the_cuda_grid_covers_the_shipped_tables_shapes():
    g = kernel_grid("cuda", False, GPU_SHAPE, gpus=8)
    assert set(decoder_linears(GPU_SHAPE)) <= set(g.gemm_shapes) and (16384, 16384) in g.gemm_shapes
    assert g.gemm_tokens[0] == 1 and g.gemm_tokens[-1] == 8192
    assert (32, 8, 128) in g.attention and {kv for _, kv, _ in g.attention} == {1, 2, 4, 8}
    assert g.allreduce_gpus == (2, 4, 8)
    assert kernel_grid("cuda", False, GPU_SHAPE, gpus=1).allreduce_gpus == ()
    cpu = kernel_grid("cpu", False, CPU_SHAPE)
    assert cpu.gemm_shapes == decoder_linears(CPU_SHAPE) and cpu.allreduce_gpus == ()


def test_cells_run_coarse_points_first():
    assert coarse_first(1) == [0]
    order = coarse_first(9)
    assert sorted(order) == list(range(9)) and order[:3] == [0, 8, 4]
    assert sorted(coarse_first(14)) == list(range(14)) and order[:2] == [0, 8]


class _FakeBackend:
    """Arrays and timing without work: each call takes 1 ms by the clock the sweep reads."""

    name, dtype_name, bytes_per_element = "numpy", "fp32", 4.0

    def randn(self, shape, scale=1.0):
        return np.zeros(shape, dtype=np.float32)

    filled = lambda self, shape, v: np.zeros(shape, dtype=np.float32)  # noqa: E731  (a stub)
    weight = staticmethod(lambda w: w)
    from_numpy = staticmethod(lambda a: a)
    mm = staticmethod(lambda x, w: None)
    attend = staticmethod(lambda q, k, v, off: None)

    def sync(self):
        pass

    def prepare(self, fn):
        return fn, "eager"

    def time(self, fn, warmup, repeats, target_s=0.0):
        fn()
        return 1e-3, [1e-3] * repeats

    def release(self):
        pass


def _sweep(deadline: Deadline, memory: float = 1e12) -> Sweep:
    grid = KernelGrid(((64, 32),), (1, 8), ((4, 2, 32),), (1,), (16, 32), (1, 2), (16, 32), 0.0)
    return Sweep(_FakeBackend(), grid, deadline, memory, 1024.0, kernel_estimate(1e9, 1e9, 0.5, 0.5, 4.0))


def test_a_sweep_past_its_deadline_measures_nothing_more():
    from planner.bench.decoder import Decoder

    decoder = Decoder(QUICK_SHAPE, _FakeBackend(), 64)
    done = _sweep(Deadline(None))
    tables = measure_kernels(done, decoder)
    assert done.measured == done.planned > 0 and all(np.isfinite(t[2]).all() for t in tables.values())
    late = _sweep(Deadline(0.0))  # perf_counter() is past 0 already
    assert measure_kernels(late, decoder) == {} and late.measured == 0 and late.planned > 0
    small = _sweep(Deadline(None), memory=1.0)  # no cell's inputs fit
    assert measure_kernels(small, decoder) == {} and any("memory budget" in s for s in small.skipped)


def _estimates(plan):
    from planner.model.specs import GpuProfileFile

    cpu = GpuProfileFile(
        name="slow CPU", vendor="x", memory_capacity_gib=24, memory_bandwidth_tb_per_s=0.01,
        dense_tflops_bf16=0.05, interconnect_gb_per_s=10, source="test", calibrated=True, price_usd_per_gpu_hour=0.0,
    ).to_gpu("slow")  # fmt: skip
    model = plan.shape.model_spec(context_window_tokens=plan.max_positions)
    cost = predict_cases(engine_inputs(cpu, model, 4.0, 1.0, 1.0), plan.cases)
    return {c: float(t) for c, t in zip(plan.cases, cost.time_s, strict=True)}


def test_a_slow_machine_gets_a_smaller_run_that_keeps_every_phase():
    plan = make_plan("cpu", False, 32 * 2**20, 4.0)
    step_s = _estimates(plan)  # 50 GFLOP/s, 10 GB/s: the full plan would take minutes
    full = sum(case_cost_s(step_s[c], plan) for c in plan.cases)
    assert full > 150
    sized = size_to_budget(plan, step_s, spent_s=20.0, round_s=8.0, budget_s=150.0)
    assert sized.estimate_s <= 150.0 + 1e-9 and sized.dropped and sized.notes
    assert sized.plan.target_s < plan.target_s
    kept = sized.plan.cases
    for phase, least in MIN_CASES.items():
        if phase == "decode":
            for ctx in {c.ctx for c in plan.cases if c.phase == "decode"}:
                assert sum(c.phase == "decode" and c.ctx == ctx for c in kept) >= least
        else:
            assert sum(c.phase == phase for c in kept) >= min(least, sum(c.phase == phase for c in plan.cases))
    fast = size_to_budget(plan, {c: 1e-4 for c in plan.cases}, 5.0, 2.0, 150.0)
    assert fast.plan == plan and fast.rounds == 5 and not fast.dropped


def test_a_passed_deadline_still_measures_one_case_per_phase():
    from planner.bench.backend import NumpyBackend
    from planner.bench.decoder import Decoder

    plan = make_plan("cpu", True, None, 4.0)
    be = NumpyBackend(threads=1)
    decoder = Decoder(plan.shape, be, plan.max_positions)
    cost = {c: float(c.tokens) for c in plan.cases}
    measured, skipped = measure_cases(decoder, plan, math.inf, lambda _m: None, cost_s=cost.get, deadline=Deadline(0.0))
    assert set(measured) == essential_cases(plan.cases, cost.get)
    assert {c.phase for c in measured} == {"prefill", "decode", "mixed", "verify"}
    assert len(skipped) == len(plan.cases) - len(measured) and all("time budget" in s for s in skipped)


def test_kernel_table_data_is_validated():
    ok = dict(name="gemm", keys={"dtype": ["float32"], "n": [8], "k": [8]}, axes=[[1.0, 2.0]], latency_ms=[[0.1, None]])
    assert np.isnan(KernelTableData(**ok).arrays()[2][0, 1])
    with pytest.raises(ValueError, match="shape"):
        KernelTableData(**(ok | {"latency_ms": [[0.1]]}))
    with pytest.raises(ValueError, match="> 0"):
        KernelTableData(**(ok | {"latency_ms": [[0.1, -1.0]]}))
    with pytest.raises(ValueError):
        KernelTableData(**(ok | {"latency_ms": [[0.1, float("inf")]]}))


def test_the_page_offers_the_same_table_file(quick):
    from ui.tabs.crosscheck_kernels import table_bytes, table_frame

    table = read_table("x.kernels.npz", table_bytes(quick))
    assert table.meta.gpu == quick.device.slug and set(table.tables) == set(table_frame(quick)["table"])
