"""Step times on measured kernels (docs/model.md §4–5 "Measured kernels"): the composition against the kernels
summed by hand, the basis each scenario rests on, the fallback to the fitted roofline, a user's own table,
and published rows it is pinned to."""

from __future__ import annotations

import json

import numpy as np
import pytest

from planner.engine.evaluate import compute, evaluate, inputs_for, resolve, time_basis
from planner.engine.inputs import stack_inputs
from planner.engine.roofline import decode, prefill
from planner.kernels import lookup, store
from planner.kernels.format import KernelTableMeta, TableMeta, read_table, write_table
from planner.model.catalog import load_catalog
from planner.model.params import activation_elements_per_token_per_layer
from planner.model.scenario import Scenario
from planner.units import MS_PER_S, US_PER_S

CATALOG = load_catalog()
H100_VLLM = "planner/data/kernel_tables/h100-sxm/vllm-0.24.0.npz"
LLAMA_8B_FP8 = dict(gpu="h100-sxm", model="llama-3.1-8b", wdtype="fp8", kvdtype="fp8", engine="vllm@0.33")


def _ms(v) -> float:
    return float(np.asarray(v).reshape(-1)[0]) / MS_PER_S


def _hand_sum(batch: float, ctx: float, prompt: float) -> tuple[float, float]:
    """(decode step, prefill) of Llama-3.1-8B FP8 on one H100 from vLLM 0.24's tables, kernel by kernel."""
    from tests.paths import ROOT

    f = read_table(ROOT / H100_VLLM)
    gemm, gen, ctx_t = f.tables["gemm"], f.tables["generation_attention"], f.tables["context_attention"]
    shapes = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]  # qkv, o, gate_up, down
    k = CATALOG.engine("vllm@0.33").kernels
    per_token = 32 * activation_elements_per_token_per_layer(CATALOG.models["llama-3.1-8b"]) * 2  # L · a · 2 B
    elementwise = per_token / (CATALOG.gpus["h100-sxm"].memory_bandwidth_bytes_per_s * k.elementwise_bandwidth_frac)

    def layers(tokens):
        return 32 * sum(_ms(lookup.gemm_ms(gemm, "fp8", n, kk, [tokens])) for n, kk in shapes)

    match = dict(attn_dtype="bfloat16", kv_dtype="fp8", head_dim=128, window=0, kv_heads=8)
    head = _ms(lookup.gemm_ms(gemm, "bfloat16", 128256, 4096, [batch]))
    attention = 32 * _ms(lookup.attention_ms(gen, match, 32, [batch], [ctx], lookup.DECODE_SEQ_SLOPE))
    dec = (k.step_overhead_us + 32 * k.decode_layer_overhead_us) / US_PER_S
    dec += layers(batch) + head + attention + elementwise * batch
    pre_attention = 32 * _ms(lookup.attention_ms(ctx_t, match, 32, [1.0], [prompt], lookup.PREFILL_SEQ_SLOPE))
    pre = (k.step_overhead_us + 32 * k.layer_overhead_us) / US_PER_S + layers(prompt)
    pre += _ms(lookup.gemm_ms(gemm, "bfloat16", 128256, 4096, [1.0])) + pre_attention + elementwise * prompt
    return dec, pre


def test_the_step_is_the_sum_of_its_kernels():
    """Batch 64 at 2,048 tokens of context and a 2,048-token prompt: grid points of every curve, so the curves'
    sampling adds nothing; within 2 %: the curves are non-decreasing (a point takes the least time at or above
    it — a padded larger kernel), which moves this decode step's GEMMs by 0.9 %."""
    x = inputs_for(resolve(Scenario(**LLAMA_8B_FP8), CATALOG)).as_arrays()
    assert float(x.kernel_set) > 0
    dec, pre = _hand_sum(64.0, 2048.0, 2048.0)
    assert float(decode(x, batch=64.0, ctx=2048.0).time_s) == pytest.approx(dec, rel=0.02)
    assert float(prefill(x, tokens=2048.0).time_s) == pytest.approx(pre, rel=0.02)


def test_the_basis_is_named_and_falls_back_to_the_fitted_roofline():
    def basis(**kw) -> str:
        return time_basis(resolve(Scenario(**{**LLAMA_8B_FP8, **kw}), CATALOG))

    assert basis() == "measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)"
    assert basis(engine="trtllm@1.0") == "measured kernels (TensorRT-LLM 1.3.0rc20, NVIDIA H100 SXM)"
    assert basis(gpu="mi300x").startswith("fitted roofline (vLLM 0.33.0 profile, 89 published rows; no vLLM kernel")
    assert basis(engine="vllm@0.19") == "fitted roofline (vLLM 0.19.0 profile, 89 published rows)"
    assert "the link sets MFU/MBU" in basis(mfu=0.6)
    assert "roofline calibration" in basis(timing="b0.8")
    assert basis(timing="s40").startswith("measured kernels")  # an overhead calibration stays on the kernels
    assert "W8A8" not in basis(wdtype="int8") and basis(wdtype="int8").startswith("fitted roofline")
    on_roofline = inputs_for(resolve(Scenario(**{**LLAMA_8B_FP8, "gpu": "mi300x"}), CATALOG))
    assert float(on_roofline.kernel_set) == 0.0


def test_a_vectorised_call_over_mixed_bases_equals_each_scenario():
    kws = [LLAMA_8B_FP8, {**LLAMA_8B_FP8, "gpu": "mi300x"}, {**LLAMA_8B_FP8, "tp": 2}, {**LLAMA_8B_FP8, "gpu": "b200"}]
    scenarios = [Scenario(**kw, batch=96, prompt=1500, output=300) for kw in kws]
    x = stack_inputs([inputs_for(resolve(s, CATALOG)) for s in scenarios])
    out = compute(x)
    for i, s in enumerate(scenarios):
        one = evaluate(s, CATALOG).metrics
        for name in ("ttft_s", "tpot_s", "chunked_ttft_s", "max_throughput_output_tokens_per_s_per_gpu"):
            assert float(np.asarray(out[name])[i]) == pytest.approx(one[name], rel=1e-9), (s.gpu, s.tp, name)


def test_a_users_own_table_replaces_the_shipped_kernels(tmp_path, monkeypatch):
    """A table with engine '*' for the GPU (the user's microbenchmark) wins for the kernels it holds."""
    from tests.paths import ROOT

    shipped = read_table(ROOT / H100_VLLM).tables["gemm"]
    slower = {
        "gemm": ({k: v for k, v in shipped.keys.items()}, shipped.axes, shipped.latency_ms * 2.0),
    }
    meta = KernelTableMeta(
        gpu="h100-sxm",
        engine="*",
        engine_version="0.2.0",
        measured_by="kvplan bench 0.2.0 (test)",
        source="tests/engine/test_kernel_basis.py",
        license="CC0-1.0",
        tables={"gemm": TableMeta(keys=("dtype", "n", "k"), axes=("tokens",))},
    )
    write_table(tmp_path / "kernel_tables" / "mine.npz", meta, slower)
    s = Scenario(**LLAMA_8B_FP8, prompt=8192)
    before = evaluate(s, CATALOG)
    monkeypatch.setenv("KVPLAN_DATA_DIR", str(tmp_path))
    mine = evaluate(s, CATALOG)
    assert mine.time_basis == "measured kernels (vLLM 0.24.0 + your own microbenchmark 0.2.0, NVIDIA H100 SXM)"
    assert mine.metrics["ttft_s"] > 1.6 * before.metrics["ttft_s"]  # its GEMMs are 2× slower: the prefill's bulk
    monkeypatch.delenv("KVPLAN_DATA_DIR")
    assert store.problems() == ()


def test_a_broken_user_table_is_named_and_skipped(tmp_path, monkeypatch):
    (tmp_path / "kernel_tables").mkdir()
    (tmp_path / "kernel_tables" / "broken.npz").write_bytes(b"not a zip")
    monkeypatch.setenv("KVPLAN_DATA_DIR", str(tmp_path))
    assert any(p.startswith("broken.npz: not a readable .npz file") for p in store.problems())
    assert evaluate(Scenario(**LLAMA_8B_FP8), CATALOG).time_basis.startswith("measured kernels (vLLM 0.24.0")


def _trtllm_bench(**kw) -> float:
    """A trtllm-bench perf-overview row as kvplan predicts it (benchmarks/accuracy/modern.py: trtllm-bench's
    max_batch_size 4,096 and max_num_tokens 8,192 for 128/128 and 2,048 / 128-token outputs alike here)."""
    s = Scenario(kvdtype="fp8", mem_util=0.95, eplb=False, engine="trtllm@1.0", **kw)
    return float(evaluate(s, CATALOG).metrics["max_throughput_output_tokens_per_s_per_gpu"])


def test_pinned_to_tensorrt_llm_1_0_perf_overview():
    """NVIDIA/TensorRT-LLM@00f37686:docs/source/performance/perf-overview.md, table 'Llama 3.1 8B', 1 GPU
    (FP8): H100 128/128 '28,312' (a fitted row) and H200 128/2048 '26,221' (held out), total output tok/s."""
    h100 = _trtllm_bench(
        gpu="h100-sxm", model="llama-3.1-8b", wdtype="fp8", prompt=128, output=128, batch=4096, chunk=8192
    )
    assert h100 == pytest.approx(28_312, rel=0.10)
    h200 = _trtllm_bench(
        gpu="h200", model="llama-3.1-8b", wdtype="fp8", prompt=128, output=2048, batch=4096, chunk=4352
    )
    assert h200 == pytest.approx(26_221, rel=0.15)


def test_the_2025_rows_name_their_fitted_rows():
    from tests.paths import ROOT

    rows = json.loads((ROOT / "benchmarks/data/published-serving-2025.json").read_text(encoding="utf-8"))["rows"]
    fitted = [r for r in rows if r["fit_role"] == "fit"]
    assert fitted and all(r["category"] == "throughput" and r["source"] and r["quote"] for r in fitted)


def test_gb300_and_server_edition_rows_are_predicted_on_their_tables_and_held_out():
    """Issue 32: the 2025–26 trtllm-bench rows on GB300 (28) and the RTX PRO 6000 Server Edition (40) were pending
    until their kernel tables shipped; they came after the [kernels] fit, so every one is held out whatever its
    id's hash said (benchmarks/accuracy/modern.py AFTER_FIT_GPUS), and each rests on its own GPU's measured kernels."""
    from benchmarks.accuracy import modern

    rows = [
        r
        for r in modern.load_rows()
        if ("gb300" in r.gpu.lower() or "server edition" in r.gpu.lower()) and "trtllm-bench" in r.engine
    ]
    assert len(rows) == 68 and any(r.fit_role == "fit" for r in rows)  # 24 carry the hash's "fit" label
    cases, pending = modern.cases(rows, CATALOG)
    assert pending == [] and len(cases) == 68
    assert {c.scenario.gpu for c in cases} == modern.AFTER_FIT_GPUS
    assert all(c.row.fit_role == "held_out" for c in cases)
    for c in cases:
        assert c.basis.startswith(f"measured kernels (TensorRT-LLM 1.3.0rc20, {CATALOG.gpus[c.scenario.gpu].name}")
    notes = [p.note for p in modern.predict(cases, modern.stacked_inputs(cases, CATALOG))]
    assert all(n.endswith(", held out)") for n in notes)
    # trtllm-bench's max_batch_size and max_num_tokens are per micro-batch: pp of them in flight (modern.py doc)
    staged = [c for c in cases if c.scenario.pp > 1]
    assert len(staged) == 30
    for c in staged:
        planned = modern.scenario_for(c.row, CATALOG)  # before trtllm-bench's settings
        kv = float(compute(inputs_for(resolve(planned, CATALOG)))["max_concurrent_sequences"])
        bs, tokens = modern.trtllm_bench_settings(kv, c.scenario.prompt, c.scenario.output, c.scenario.pp)
        assert (c.scenario.batch, c.scenario.chunk) == (bs * c.scenario.pp, max(tokens, bs) * c.scenario.pp)
