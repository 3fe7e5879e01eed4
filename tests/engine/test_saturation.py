"""Offline maximum throughput (planner/engine/saturation.py): the prompts of data-parallel ranks."""

from __future__ import annotations

import numpy as np
import pytest

from planner.engine.evaluate import compute, inputs_for, resolve
from planner.engine.roofline import decode_context_tokens, step_cost
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario

CATALOG = load_catalog()
#: Qwen3-235B-A22B on 8 × H200 as TensorRT-LLM's perf-overview runs it (attention DP 8, EP 8), prompt-heavy.
DEP8 = dict(
    gpu="h200", model="qwen3-235b-a22b", wdtype="fp8", kvdtype="fp8", engine="trtllm@1.0", tp=1, dp=8, ep=8,
    eplb=False, prompt=2048, output=128, batch=2048, chunk=8192, mem_util=0.95,
)  # fmt: skip


def _f(v) -> float:
    return float(np.asarray(v).reshape(-1)[0])


def test_every_ranks_prompt_reaches_the_experts_in_the_same_step():
    """Each of the dp ranks prefills its own B/dp prompts side by side with the others': the marginal prompt step
    holds one P-token prompt on every rank, so the lock-stepped experts see dp · P new tokens (not P)."""
    x = inputs_for(resolve(Scenario(**DEP8), CATALOG))
    m = compute(x)
    b, p, o, dp = _f(m["max_throughput_batch"]), 2048.0, 128.0, 8.0
    ctx = decode_context_tokens(x)
    dec = step_cost(x, seqs=b, ctx=ctx)
    every = step_cost(x, seqs=b, ctx=ctx, n=p * dp, prompts=dp)
    one = step_cost(x, seqs=b, ctx=ctx, n=p, prompts=1.0)
    g_dec = _f(dec.time_s) - _f(dec.overhead_s)
    delta = _f(every.time_s) - _f(every.overhead_s) - g_dec
    assert delta > 1.5 * (_f(one.time_s) - _f(one.overhead_s) - g_dec)  # the experts' and exchange's dp-fold tokens
    share = min(b / dp / o, 1.0)
    fixed = share * _f(every.overhead_s) + (1.0 - share) * _f(dec.overhead_s)
    assert _f(m["max_throughput_tpot_s"]) == pytest.approx(g_dec + b / dp * delta / o + fixed, rel=1e-9)


def test_without_data_parallel_ranks_one_prompt_is_the_marginal_step():
    s = Scenario(**{**DEP8, "model": "llama-3.1-70b", "dp": 1, "ep": 1, "tp": 8, "eplb": True})
    x = inputs_for(resolve(s, CATALOG))
    m = compute(x)
    b = _f(m["max_throughput_batch"])
    ctx = decode_context_tokens(x)
    dec, mix = step_cost(x, seqs=b, ctx=ctx), step_cost(x, seqs=b, ctx=ctx, n=2048.0, prompts=1.0)
    g_dec = _f(dec.time_s) - _f(dec.overhead_s)
    delta = _f(mix.time_s) - _f(mix.overhead_s) - g_dec
    share = min(b / 128.0, 1.0)
    fixed = share * _f(mix.overhead_s) + (1.0 - share) * _f(dec.overhead_s)
    assert _f(m["max_throughput_tpot_s"]) == pytest.approx(g_dec + b * delta / 128.0 + fixed, rel=1e-9)
