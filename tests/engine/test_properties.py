"""Invariants of the engine, checked with hypothesis over random valid inputs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import compute, inputs_for, resolve
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from tests.valid_configs import valid_kw

CATALOG = load_catalog()
GPUS = sorted(CATALOG.gpus)
MODELS = sorted(CATALOG.models)


@st.composite
def scenarios(draw):
    model = draw(st.sampled_from(MODELS))
    prompt = draw(st.integers(1, 200_000))
    kw = dict(
        gpu=draw(st.sampled_from(GPUS)),
        model=model,
        tp=draw(st.sampled_from([1, 2, 4, 8])),
        wdtype=draw(st.sampled_from(["bf16", "fp8", "int4"])),
        kvdtype=draw(st.sampled_from(["bf16", "fp8"])),
        batch=draw(st.integers(1, 1024)),
        prompt=prompt,
        output=draw(st.integers(1, 8192)),
        chunk=draw(st.integers(16, 16384)),
        prefix=draw(st.integers(0, prompt)),
        hit=draw(st.floats(0, 1)),
        alpha=draw(st.floats(0, 1)),
        gamma=draw(st.integers(0, 16)),
        mfu=draw(st.floats(0.05, 1)),
        mbu=draw(st.floats(0.05, 1)),
    )
    return Scenario(**valid_kw(kw, CATALOG))  # a configuration vLLM accepts (tests/valid_configs.py)


def x_of(s):
    return inputs_for(resolve(s, CATALOG))


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_monotonic_in_batch(s):
    x = x_of(s)
    b = np.array([1.0, 2.0, 8.0, 64.0, 512.0])
    out = compute(x.with_(batch=b))
    assert np.all(np.diff(out["plain_tpot_s"]) >= -1e-15)  # latency never falls with batch
    tokens_per_s = b / out["plain_tpot_s"]
    assert np.all(np.diff(tokens_per_s) >= -1e-9 * tokens_per_s[1:])  # throughput never falls either


@settings(max_examples=60, deadline=None)
@given(scenarios())
def test_monotonic_in_context(s):
    x = x_of(s)
    p = np.array([16.0, 256.0, 4096.0, 65536.0])
    out = compute(x.with_(prompt_tokens=p, prefix_tokens=0.0))
    assert np.all(np.diff(out["kv_bytes_per_sequence"]) >= 0)
    assert np.all(np.diff(out["max_concurrent_sequences"]) <= 0)
    assert np.all(np.diff(out["ttft_s"]) > 0)
    assert np.all(np.diff(out["plain_tpot_s"]) >= 0)


@settings(max_examples=40, deadline=None)
@given(scenarios())
def test_monotonic_in_kv_heads(s):
    m = CATALOG.models[s.model]
    if m.is_mla:
        return
    divisors = [d for d in range(1, m.heads + 1) if m.heads % d == 0]  # at tp = 1 every divisor splits
    kv = [
        float(np.asarray(compute(x_of(s.model_copy(update={"kv_heads": d, "tp": 1})))["kv_bytes_per_token"]))
        for d in divisors
    ]
    assert all(a < b for a, b in zip(kv, kv[1:], strict=False))  # pairs of neighbours


@settings(max_examples=80, deadline=None)
@given(scenarios())
def test_decode_never_beats_weights_over_bandwidth_and_counts_are_sane(s):
    x = x_of(s)
    out = compute(x)
    floor_s = float((x.total_params - x.lookup_params) * x.weight_bytes_per_param / x.tp) / float(
        x.bandwidth_bytes_per_s
    )
    if float(x.experts) == 0:
        assert float(out["plain_tpot_s"]) >= floor_s * (1 - 1e-9)
    for k in (
        "max_concurrent_sequences",
        "max_concurrent_sequences_contiguous",
        "kv_capacity_tokens",
        "kv_budget_bytes_per_gpu",
    ):
        assert float(out[k]) >= 0
    # never is inf: the ridge, the replicas a power limit holds (inf when none is set), and a newcomer's chunked
    # prefill when the decodes fill the budget
    # and the power figures are NaN on a profile that publishes no board power (H800, A10G: "not published")
    unbounded = {"ridge_batch", "replicas_within_power_limit"}
    infinite_ok = unbounded | ({"chunked_steps", "chunked_ttft_s"} if s.batch >= s.chunk else set())
    if not np.isfinite(float(x.tdp_w)):
        infinite_ok |= {k for k in out if "power" in k or "energy" in k or k == "kwh_per_million_output_tokens"}
    for k, v in out.items():
        if k not in infinite_ok:
            assert np.all(np.isfinite(np.asarray(v, dtype=float))), k


refinements = st.fixed_dictionaries(
    dict(
        compute_memory_overlap=st.floats(-1, 1),
        attention_compute_frac=st.floats(0.01, 1),
        attention_bandwidth_frac=st.floats(0.01, 1),
    )
)


@settings(max_examples=60, deadline=None)
@given(scenarios(), refinements)
def test_measured_refinements_only_slow_the_roofline_and_keep_it_monotonic(s, ref):
    # o ≤ 1 and attention shares ≤ 1 can only add time to the plain roofline; more overlap
    # never costs time; latency and throughput still never fall with batch.
    from planner.engine.roofline import decode

    x = x_of(s).with_(compute_memory_overlap=1.0, attention_compute_frac=1.0, attention_bandwidth_frac=1.0)
    b = np.array([1.0, 2.0, 8.0, 64.0, 512.0])
    plain = decode(x.as_arrays(), batch=b).time_s
    refined_x = x.with_(**ref).as_arrays()
    refined = decode(refined_x, batch=b).time_s
    assert np.all(refined >= plain * (1 - 1e-12))
    more_overlap = decode(
        refined_x.with_(compute_memory_overlap=np.minimum(refined_x.compute_memory_overlap + 0.5, 1.0)), batch=b
    ).time_s
    assert np.all(more_overlap <= refined * (1 + 1e-12))
    assert np.all(np.diff(refined) >= -1e-15 * refined[1:])
    tokens_per_s = b / refined
    assert np.all(np.diff(tokens_per_s) >= -1e-9 * tokens_per_s[1:])
