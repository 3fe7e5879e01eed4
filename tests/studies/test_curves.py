"""Chart data (planner.studies.curves): shapes the physics dictates, and agreement with the
engine's own metrics at the scenario's point of every curve."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import evaluate
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from planner.studies import curves
from tests.valid_configs import valid_kw

CATALOG = load_catalog()
GPUS = sorted(CATALOG.gpus)
MODELS = sorted(CATALOG.models)
DENSE_MODELS = [k for k in MODELS if not CATALOG.models[k].is_moe]


def ev(**kw):
    kw = valid_kw(kw, CATALOG)
    kw.setdefault("prefix", min(1024, kw.get("prompt", 2048)))
    return evaluate(Scenario(**kw), CATALOG)


def nondecreasing(v, rtol=1e-12):
    v = np.asarray(v, dtype=float)
    return bool(np.all(np.diff(v) >= -rtol * np.abs(v[:-1])))


scenarios = st.builds(
    dict,
    gpu=st.sampled_from(GPUS),
    model=st.sampled_from(MODELS),
    tp=st.sampled_from([1, 2, 4, 8]),
    batch=st.integers(1, 512),
    prompt=st.integers(16, 32_768),
    output=st.integers(1, 4096),
    chunk=st.sampled_from([16, 64, 256, 512, 1000, 2048, 8192]),
    kvdtype=st.sampled_from(["bf16", "fp8"]),
    wdtype=st.sampled_from(["bf16", "fp8", "int4"]),
)


def test_grids_are_sorted_unique_and_hold_the_marks():
    g = curves.pow2_grid(16, 3000, 700, 3000)
    assert g[0] == 16 and g[-1] == 4096 and 700 in g and 3000 in g
    assert np.all(np.diff(g) > 0)
    lg = curves.log_grid(256, 262_144, 48, 131_072, 2304)
    assert lg[0] == 256 and lg[-1] == 262_144 and {131_072, 2304} <= set(lg)
    assert np.all(np.diff(lg) > 0)


# ---------------------------------------------------------------- memory


@pytest.mark.parametrize("model", ["llama-3.1-8b", "llama-3.1-405b", "deepseek-v3"])
def test_memory_breakdown_sums_to_capacity_when_it_fits(model):
    r = ev(model=model, gpu="h200", tp=8, batch=64)
    df = curves.memory_breakdown(r)
    parts = dict(zip(df["component"], df["bytes_per_gpu"], strict=True))
    assert (df["bytes_per_gpu"] >= 0).all()
    assert parts["weights"] == r.metrics["weight_bytes_per_gpu"]
    # on the device: everything but the two "beyond" bars adds up to the total the driver reports
    on_device = sum(v for k, v in parts.items() if k not in ("kv_cache_over_budget", "over_capacity"))
    assert on_device - parts["over_capacity"] == pytest.approx(r.metrics["memory_total_bytes_per_gpu"], rel=1e-12)


def test_memory_breakdown_shows_kv_beyond_budget():
    r = ev(batch=4096, prompt=8192)
    parts = dict(zip(*curves.memory_breakdown(r).to_dict("list").values(), strict=True))
    assert parts["kv_cache_free"] == 0
    assert parts["kv_cache_in_use"] == pytest.approx(r.metrics["kv_budget_bytes_per_gpu"])
    assert parts["kv_cache_over_budget"] > 0


@settings(max_examples=25, deadline=None)
@given(
    gpu=st.sampled_from(GPUS),
    model=st.sampled_from(MODELS),
    block=st.sampled_from([1, 16, 64, 256, 1024]),
    tp=st.sampled_from([1, 8]),
)
def test_concurrency_paged_beats_contiguous_within_window(gpu, model, block, tp):
    """Paged beats contiguous inside the window, except on sliding-window models: vLLM reserves
    W − 1 + C (+ a block) per window layer (or, hybrid manager off, the whole context) where a
    contiguous allocator keeps exactly W; there the curves only fall."""
    windowed = CATALOG.models[model].sliding_window_layers > 0
    r = ev(gpu=gpu, model=model, block=block, tp=tp)
    df = curves.concurrency_vs_context(r)
    paged = df[df.scheme == "paged"].reset_index(drop=True)
    contig = df[df.scheme == "contiguous"].reset_index(drop=True)
    assert (paged.context_tokens == contig.context_tokens).all()
    window = float(r.inputs.context_window_tokens)
    inside = paged.context_tokens <= window
    assert windowed or (contig.max_concurrent_sequences[inside] <= paged.max_concurrent_sequences[inside]).all()
    # contiguous reserves the whole window: flat inside it
    assert contig.max_concurrent_sequences[inside].nunique() == 1
    assert nondecreasing(-paged.max_concurrent_sequences)
    assert nondecreasing(-contig.max_concurrent_sequences)
    assert paged.context_tokens.iloc[-1] >= 2 * window and window in set(paged.context_tokens)


def test_concurrency_curve_passes_through_the_scenario():
    r = ev(prompt=3000, output=500)
    df = curves.concurrency_vs_context(r)
    row = df[(df.context_tokens == 3500)].set_index("scheme")["max_concurrent_sequences"]
    assert row["paged"] == r.metrics["max_concurrent_sequences"]
    assert row["contiguous"] == r.metrics["max_concurrent_sequences_contiguous"]


@pytest.mark.parametrize("model", MODELS)
def test_kv_per_token_mha_ge_current_ge_mqa(model):
    r = ev(model=model)
    df = curves.kv_per_token_by_attention(r)
    assert df["current"].sum() == 1
    assert df.loc[df["current"], "kv_bytes_per_token"].item() == r.metrics["kv_bytes_per_token"]
    assert nondecreasing(-df["kv_bytes_per_token"])  # MHA, chosen, MQA in that order
    assert df["kv_heads"].is_unique


# ---------------------------------------------------------------- latency & throughput


@settings(max_examples=20, deadline=None)
@given(scenarios)
def test_roofline_never_exceeds_either_roof(kw):
    r = ev(**kw)
    df = curves.roofline(r)
    x = r.inputs
    peak, bw = x.peak_flop_per_s * x.mfu, x.bandwidth_bytes_per_s * x.mbu
    roof = df[df.series == "roof"]
    assert nondecreasing(roof.arithmetic_intensity_flop_per_byte) and nondecreasing(roof.attainable_flop_per_s)
    assert (df.attainable_flop_per_s <= peak * (1 + 1e-12)).where(df.series != "hardware_peak", True).all()
    assert (
        df.attainable_flop_per_s <= df.arithmetic_intensity_flop_per_byte * x.bandwidth_bytes_per_s * (1 + 1e-12)
    ).all()
    pts = df[df.series.isin(["prefill", "decode"])]
    assert len(pts) == 2
    # below the hardware roof always (the derated roof uses MBU; attention streams KV at its own share)
    hw_roof = np.minimum(x.peak_flop_per_s, pts.arithmetic_intensity_flop_per_byte * x.bandwidth_bytes_per_s)
    assert (pts.achieved_flop_per_s <= hw_roof * (1 + 1e-9)).all()
    assert roof.attainable_flop_per_s.max() == pytest.approx(peak)
    assert roof.attainable_flop_per_s.min() == pytest.approx(0.1 * bw)


@settings(max_examples=25, deadline=None)
@given(scenarios)
def test_decode_throughput_grows_with_batch_until_memory_runs_out(kw):
    r = ev(**kw)
    df = curves.decode_vs_batch(r)
    fits = df[df.fits_memory]
    assert nondecreasing(fits.tokens_per_s_per_gpu)
    assert nondecreasing(df.decode_step_s)
    assert df.batch.iloc[0] == 1 and df.batch.iloc[-1] >= 512
    now = df[df.batch == r.resolved.scenario.batch]
    assert now.decode_step_s.item() == pytest.approx(r.metrics["plain_tpot_s"], rel=1e-12)
    # memory runs out exactly past the largest batch that fits
    limit = curves.max_batch_that_fits(r)
    assert (df.fits_memory == (df.batch <= limit)).all()
    if 0 < limit < curves.BATCH_GRID_MAX:
        assert limit in set(df.batch) and limit + 1 in set(df.batch)


@pytest.mark.parametrize("model", DENSE_MODELS)
def test_compute_bound_turn_matches_ridge_batch(model):
    r = ev(model=model, gpu="h100-sxm", tp=8, prompt=128, output=16)
    ridge = r.metrics["ridge_batch"]
    df = curves.decode_vs_batch(r)
    if np.isfinite(ridge):
        assert df.batch.iloc[-1] >= min(2 * ridge, curves.BATCH_GRID_MAX)
        far = (df.batch < 0.9 * ridge) | (df.batch > 1.1 * ridge)
        assert ((df.batch > ridge) == df.compute_bound)[far].all()
    else:
        assert not df.compute_bound.any()


def test_latency_throughput_trades_tpot_for_tokens_and_cost():
    r = ev(model="llama-3.1-70b", gpu="h200", tp=2)
    df = curves.latency_throughput(r)
    limit = curves.max_batch_that_fits(r)
    assert 1 <= limit <= r.metrics["max_concurrent_sequences"]
    assert df.batch.iloc[0] == 1 and df.batch.iloc[-1] == limit
    assert df.fits_memory.all()
    assert nondecreasing(df.tpot_s) and nondecreasing(df.tokens_per_s_per_gpu)
    assert nondecreasing(-df.cost_per_million_output_tokens_usd)
    now = df[df.batch == 32]
    assert now.cost_per_million_output_tokens_usd.item() == pytest.approx(
        r.metrics["cost_per_million_output_tokens_usd"]
    )


def test_latency_throughput_when_nothing_fits_runs_to_the_batch_flagged():
    r = ev(model="llama-3.1-405b", batch=8)
    assert not r.metrics["fits"]
    df = curves.latency_throughput(r)
    assert list(df.batch) == [1, 2, 4, 8] and not df.fits_memory.any()


@settings(max_examples=20, deadline=None)
@given(scenarios)
def test_ttft_grows_with_prompt_and_hits_the_metric(kw):
    r = ev(**kw)
    df = curves.ttft_vs_prompt(r)
    assert nondecreasing(df.ttft_s)
    assert df[df.prompt_tokens == r.resolved.scenario.prompt].ttft_s.item() == pytest.approx(
        r.metrics["ttft_nocache_s"], rel=1e-12
    )


# ---------------------------------------------------------------- chunked prefill


@settings(max_examples=30, deadline=None)
@given(scenarios)
def test_smaller_chunks_raise_newcomer_ttft_and_lower_running_itl(kw):
    r = ev(**kw)
    s = r.resolved.scenario  # kw made valid (tests/valid_configs.py): use what was evaluated
    df = curves.chunked_curves(r)
    # the step budget covers the B decodes first: only chunks above B admit the newcomer (the
    # others, TTFT never, are left out), up to one that holds the whole prompt beside them
    assert df.chunk_tokens.min() > s.batch and df.chunk_tokens.iloc[-1] >= s.prompt + s.batch
    assert np.isfinite(df.newcomer_ttft_s).all()
    assert nondecreasing(df.running_itl_s)
    pow2 = df[np.isin(df.chunk_tokens, 16 * 2 ** np.arange(24))]
    # the engine sums chunks at their mean past; with sliding windows min(keys, W) makes
    # that approximate by a few parts per million, hence the tolerance
    assert nondecreasing(-pow2.newcomer_ttft_s, rtol=1e-4)
    now = df[df.chunk_tokens == s.chunk]
    if s.chunk > s.batch:
        assert now.newcomer_ttft_s.item() == pytest.approx(r.metrics["chunked_ttft_s"], rel=1e-12)
        assert now.running_itl_s.item() == pytest.approx(r.metrics["chunked_max_itl_s"], rel=1e-12)
    else:
        assert now.empty and math.isinf(r.metrics["chunked_ttft_s"])
    # chunking bounds the running streams' worst gap by the unchunked one
    assert (df.running_itl_s <= df.nochunk_running_itl_s * (1 + 1e-12)).all()
    assert (df.nochunk_newcomer_ttft_s == r.metrics["nochunk_ttft_s"]).all()


# ---------------------------------------------------------------- speculative decoding


@settings(max_examples=20, deadline=None)
@given(scenarios, st.sampled_from(["", "llama-3.2-1b"]))
def test_speculative_grid_monotone_in_alpha_and_marks_losses(kw, draft):
    r = ev(**kw, spec=True, alpha=0.7, gamma=4, draft=draft)
    df = curves.speculative_grid(r)
    assert len(df) == 21 * 12
    assert (df.loses == (df.speedup < 1)).all()
    for _, part in df.groupby("gamma"):
        assert nondecreasing(part.sort_values("alpha").speedup)
    assert (df[df.alpha == 0].speedup <= 1).all()  # nothing accepted: pure overhead
    here = df[(df.alpha == 0.7) & (df.gamma == 4)]
    assert here.speedup.item() == pytest.approx(r.metrics["spec_speedup"], rel=1e-9)


def test_speculative_vs_batch_hits_the_metric_and_can_lose():
    r = ev(model="mixtral-8x7b", gpu="h100-sxm", tp=2, spec=True, alpha=0.3, gamma=4, batch=64)
    df = curves.speculative_vs_batch(r)
    assert df.batch.iloc[0] == 1 and df.batch.iloc[-1] == curves.spec_batch_top(r)
    assert df[df.batch == 64].speedup.item() == pytest.approx(r.metrics["spec_speedup"], rel=1e-9)
    assert df.loses.any() and (df.loses == (df.speedup < 1)).all()


def test_speculative_vs_batch_stops_at_the_batch_the_kv_cache_holds():
    """Issue 30: the chart ran to batch 1,024 where 102 sequences fit."""
    r = ev(model="llama-3.1-70b", gpu="h100-sxm", tp=4, spec=True, prompt=8192, batch=64)
    held = r.metrics["max_concurrent_sequences"]
    assert 1 < held < 1024
    df = curves.speculative_vs_batch(r)
    assert df.batch.iloc[-1] == int(held) and (df.batch <= held).all()
    assert 64 in set(df.batch) or held < 64


def test_cache_costs_cross_no_cache_at_break_even():
    r = ev(prompt=4096, prefix=3000, hit=0.4)
    df = curves.cache_cost_curves(r)
    be = curves.cache_break_even(r).set_index("write_policy")
    assert set(df.write_policy) == {"none", "5m", "1h"} and not df.below_minimum.any()
    none = df[df.write_policy == "none"].cost_per_request_usd
    assert none.nunique() == 1 and none.iloc[0] == pytest.approx(r.metrics["nocache_cost_per_request_usd"])
    for policy in ("5m", "1h"):
        c = df[df.write_policy == policy].sort_values("cache_hit_rate")
        assert (
            nondecreasing(-c.cost_per_request_usd)
            and c.cost_per_request_usd.iloc[0] > none.iloc[0] > c.cost_per_request_usd.iloc[-1]
        )
        assert be.loc[policy, "cost_per_request_usd"] == pytest.approx(none.iloc[0], rel=1e-12)
    assert be.loc["5m", "break_even_hit_rate"] == pytest.approx(r.metrics["cache_break_even_hit_rate"])
    five = df[(df.write_policy == "5m") & (df.cache_hit_rate == 0.4)]
    assert five.cost_per_request_usd.item() == pytest.approx(r.metrics["cache_cost_per_request_usd"])
    assert (df.cost_per_million_requests_usd == df.cost_per_request_usd * 1e6).all()


def test_prefix_below_minimum_is_flagged_and_changes_nothing():
    r = ev(prompt=4096, prefix=500)  # the default minimum is 1,024 tokens
    assert curves.prefix_below_minimum(r)
    df = curves.cache_cost_curves(r)
    assert df.below_minimum.all() and df.cost_per_request_usd.nunique() == 1
    assert curves.cache_break_even(r).below_minimum.all()
    assert not curves.prefix_below_minimum(ev(prompt=4096, prefix=0))


def test_the_speculation_caption_names_the_methods_published_acceptance(catalog):
    """Issue 30: with a method (issue 32's spec_method), the speedup chart's caption says where α comes from — the
    method's published acceptance — instead of the generic EAGLE-3 defaults."""
    from planner.links import from_query
    from planner.studies.curves import SPEC_DEFAULTS_NOTE, spec_defaults_note

    plain, _ = from_query("spec=1")
    assert spec_defaults_note(evaluate(plain, catalog)) == SPEC_DEFAULTS_NOTE
    eagle3, _ = from_query("spec=1&spec_method=eagle3&model=llama-3.1-8b")
    note = spec_defaults_note(evaluate(eagle3, catalog))
    assert note.startswith("α = 0.658: the published acceptance of EAGLE-3") and "MT-bench" in note
    ngram, _ = from_query("spec=1&spec_method=ngram")
    assert spec_defaults_note(evaluate(ngram, catalog)).startswith("No acceptance of n-gram")
