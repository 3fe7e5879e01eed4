"""The engine's shortcuts leave every metric as the straightforward computation gives it, to the bit, on
varied grids: the whole-token tables of the measured-kernel lookups (``kernels.curves.WholeTokens``), a
prefix-cache hit's prefill shared between the TTFT and the chunked prefill, a hit's chunk steps without
the biggest, the step times alone of steps that share their decodes (``engine.step_times``), and the
smallest tp that fits tried only where no tp-free rule is broken."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine import evaluate
from planner.engine.chunked import chunked_prefill
from planner.engine.memory import TP_CANDIDATES, _fits_at_tp, min_tp_that_fits
from planner.engine.prefix_reuse import prefix_cache_metrics
from planner.engine.roofline import decode_context_tokens, prefill, step_cost
from planner.engine.step_times import step_times_and_overheads_s
from planner.kernels import curves
from planner.model.scenario import Scenario

SCENARIOS = [
    {},
    dict(engine="vllm@0.19"),
    dict(model="mixtral-8x7b", tp=2),
    dict(model="gemma-2-9b", spec=True),
    dict(model="llama-3.1-70b", pp=2),
    dict(model="deepseek-v3", gpu="h200", wdtype="fp8", tp=1, dp=8, ep=8),
    dict(model="deepseek-v3", gpu="h200", wdtype="fp8", tp=8, ep=8, tbo=True),
    dict(model="llama-3.1-8b", tp=2, spec=True, draft="llama-3.2-1b"),
    dict(model="qwen3-30b-a3b", tp=2, spec=True),
]


def _grid(catalog, n: int, **scenario):
    x = evaluate.inputs_for(evaluate.resolve(Scenario(**scenario), catalog))
    rng = np.random.default_rng(23)
    prompt = rng.integers(1, 40_000, n).astype(float)
    return x.with_(
        batch=rng.integers(1, 700, n).astype(float),
        prompt_tokens=prompt,
        output_tokens=rng.integers(1, 4096, n).astype(float),
        chunk_tokens=rng.integers(16, 9000, n).astype(float),
        cache_hit_rate=rng.random(n) * (rng.random(n) > 0.2),  # a fifth without hits
        prefix_tokens=np.floor(prompt * rng.random(n)),
        alpha=rng.random(n),
    ).as_arrays()


def _same(got, want, key: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape and got.dtype == want.dtype, key
    if want.dtype.kind == "f":
        assert np.array_equal(got.view(np.int64), want.view(np.int64)), key  # the bits, NaN and -0.0 included
    else:
        assert np.array_equal(got, want), key


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_compute_without_the_token_tables_is_the_same_to_the_bit(catalog, monkeypatch, scenario):
    x = _grid(catalog, 1500, **scenario)
    fast = evaluate.compute(x)
    monkeypatch.setattr(curves, "WHOLE_MIN_SIZE", 1 << 62)  # every lookup interpolates on the grid
    plain = evaluate.compute(x)
    assert fast.keys() == plain.keys()
    for key in plain:
        _same(fast[key], plain[key], key)


@pytest.mark.parametrize("scenario", SCENARIOS[:6])
def test_shared_prefills_are_the_straightforward_ones(catalog, scenario):
    """``compute`` hands its prefills to the prefix-cache and chunked-prefill metrics; each called on its own
    computes them afresh — the same numbers."""
    x = _grid(catalog, 1200, **scenario)
    out = evaluate.compute(x)
    for key, value in {**prefix_cache_metrics(x, prefill(x)), **chunked_prefill(x)}.items():
        _same(out[key], value, key)


@pytest.mark.parametrize("scenario", [{}, dict(model="llama-3.1-405b", gpu="l4"), dict(model="qwen2.5-72b", gpu="l4")])
def test_the_smallest_tp_skips_only_scenarios_that_fit_at_no_tp(catalog, scenario):
    x = _grid(catalog, 2000, **scenario)
    every = np.stack([np.broadcast_to(_fits_at_tp(x, float(tp)), (2000,)) for tp in TP_CANDIDATES])
    want = np.where(every.any(axis=0), TP_CANDIDATES[np.argmax(every, axis=0)], 0.0)
    got = min_tp_that_fits(x)
    _same(got, want, "min_tp_that_fits")
    assert 0.0 in got and got.max() > 0  # the grid holds scenarios that fit nowhere (batch > chunk, …) and some that do


@pytest.mark.parametrize("scenario", SCENARIOS + [dict(model="qwen3-next-80b-a3b", gpu="h200", tp=2)])
def test_step_times_alone_are_the_step_costs_times_to_the_bit(catalog, scenario):
    x = _grid(catalog, 1300, **scenario)
    rng = np.random.default_rng(5)
    first = np.minimum(rng.integers(0, 5000, 1300).astype(float), x.prompt_tokens)
    fraction = first + rng.random(1300)  # not whole: the plain lookups
    past = np.floor(x.prompt_tokens * rng.random(1300))
    parts = [
        (first, past, None),
        (first, 2.0 * past, None),  # the same n: its matmul terms shared
        (np.zeros(()), 0.0, None),  # a decode step
        (fraction, past, None),
        (x.batch * x.prompt_tokens, 0.0, x.batch),  # many prompts in one step
        (np.where(first > 2000, 0.0, first), past, None),  # some steps without prefill tokens
    ]
    for seqs, ctx in ((x.batch, decode_context_tokens(x)), (0.0, 0.0), (np.floor(x.batch / 3.0), x.prompt_tokens)):
        got = step_times_and_overheads_s(x, seqs, ctx, parts)
        for (n, p, k), (t, fixed) in zip(parts, got, strict=True):
            want = step_cost(x, seqs=seqs, ctx=ctx, n=n, past=p, prompts=k)
            _same(t, want.time_s, "time_s")
            _same(fixed, want.overhead_s, "overhead_s")
