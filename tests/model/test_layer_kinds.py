"""KV cache of the new attention types and the hybrid state, through the whole engine.

Every expected value is worked out by hand from the model card's shape (comments), then
compared with what ``evaluate`` reports for a scenario: KV bytes per token (all attention
layers), per sequence (local layers capped at their window or chunk, plus a hybrid's fixed
state), and the concurrency that follows from them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.engine.evaluate import evaluate
from planner.engine.inputs import from_specs
from planner.engine.memory import kv_bytes_per_sequence, kv_bytes_per_token
from planner.model.catalog import load_gpus
from planner.model.custom_model import decode_model, encode_model
from planner.model.hf_import import model_from_hf_config
from planner.model.params import param_counts
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec

BF16 = 2
CONFIGS = Path(__file__).parent / "hf_configs"


def metrics(catalog, **kw) -> dict:
    return evaluate(Scenario(**kw), catalog).metrics


def test_gpt_oss_120b_alternating_sliding_and_full(catalog) -> None:
    # 36 layers x K,V x 8 KV heads x 64 dims x 2 B = 73,728 B per token
    per_layer_token = 2 * 8 * 64 * BF16
    m = metrics(catalog, model="gpt-oss-120b", gpu="h200", prompt=8000, output=192)
    assert m["kv_bytes_per_token"] == 36 * per_layer_token == 73_728
    # 8,192 tokens: 18 full layers keep all, 18 sliding layers their last 128
    assert m["kv_bytes_per_sequence"] == per_layer_token * (18 * 8192 + 18 * 128)


def test_gemma3_27b_five_local_to_one_global(catalog) -> None:
    # 62 layers x 2 x 16 KV heads x 128 x 2 B = 507,904 B per token
    per_layer_token = 2 * 16 * 128 * BF16
    m = metrics(catalog, model="gemma-3-27b", gpu="h200", prompt=32000, output=768)
    assert m["kv_bytes_per_token"] == 62 * per_layer_token == 507_904
    # 32,768 tokens: 10 global layers keep them all, 52 local layers 1,024
    assert m["kv_bytes_per_sequence"] == per_layer_token * (10 * 32768 + 52 * 1024)


def test_llama4_scout_chunked_local_attention(catalog) -> None:
    # 48 layers x 2 x 8 KV heads x 128 x 2 B = 196,608 B per token
    per_layer_token = 2 * 8 * 128 * BF16
    short = metrics(catalog, model="llama-4-scout-17b-16e", gpu="h200", tp=2, prompt=4000, output=96)
    assert short["kv_bytes_per_token"] == 48 * per_layer_token == 196_608
    # within one 8,192-token chunk every layer holds the whole context
    assert short["kv_bytes_per_sequence"] == 48 * per_layer_token * 4096
    long = metrics(catalog, model="llama-4-scout-17b-16e", gpu="h200", tp=2, prompt=100_000, output=1)
    # past it: 12 global (NoPE) layers keep 100,001 tokens, 36 chunked layers at most one chunk
    assert long["kv_bytes_per_sequence"] == per_layer_token * (12 * 100_001 + 36 * 8192)
    # per GPU at tp=2 the 8 KV heads split 4 + 4
    assert long["kv_bytes_per_token_per_gpu"] == 48 * per_layer_token / 2


def test_hybrid_qwen3_next_state_plus_kv(catalog) -> None:
    spec = model_from_hf_config((CONFIGS / "qwen3-next-80b-a3b-thinking.json").read_text())
    code = encode_model(spec)
    assert decode_model(code, spec.name) == spec.model_copy(
        update={"source": "", "architecture": ""}
    )  # every shape field
    # KV: 12 full-attention layers x 2 x 2 KV heads x 256 x 2 B = 24,576 B per token
    # state: 36 Gated DeltaNet layers x (3 x 8,192 conv + 32 x 128 x 128 recurrent) x 2 B = 39,518,208 B
    kv, state = 12 * 2 * 2 * 256 * BF16, 36 * (3 * 8192 + 32 * 128 * 128) * BF16
    base = {"model": "custom", "custom": code, "gpu": "h200", "tp": 2, "batch": 8}
    m = metrics(catalog, **base, prompt=16000, output=384)
    assert m["kv_bytes_per_token"] == kv == 24_576
    assert m["kv_bytes_per_sequence"] == kv * 16384 + state == 442_171_392
    # the state is fixed: doubling the context adds only KV
    m2 = metrics(catalog, **base, prompt=32384, output=384)
    assert m2["kv_bytes_per_sequence"] - m["kv_bytes_per_sequence"] == kv * 16384
    # per GPU at tp=2: half the heads and half the state
    assert m["kv_bytes_per_token_per_gpu"] == kv / 2


def test_state_counts_against_concurrency(catalog) -> None:
    """A hybrid's fixed state is memory each sequence takes: without it more sequences would fit."""
    spec = model_from_hf_config((CONFIGS / "nemotron-h-56b-base-8k.json").read_text())
    stateless = spec.model_copy(update={"state_bytes_per_layer": 1})  # 1 B per layer: negligible state
    base = {"model": "custom", "gpu": "h200", "tp": 2, "prompt": 2048, "output": 256}
    with_state = metrics(catalog, **base, custom=encode_model(spec))
    without = metrics(catalog, **base, custom=encode_model(stateless))
    # 54 Mamba-2 layers x 16,900,096 B = 912.6 MB per sequence (bf16 conv, float32 recurrent state)
    assert with_state["kv_bytes_per_sequence"] - without["kv_bytes_per_sequence"] == 54 * (16_900_096 - 1)
    assert with_state["max_concurrent_sequences"] < without["max_concurrent_sequences"]


@pytest.mark.parametrize(
    "key",
    [
        "gpt-oss-20b",
        "gpt-oss-120b",
        "gemma-3-27b",
        "llama-4-scout-17b-16e",
        "llama-4-maverick-17b-128e",
        "qwen3-30b-a3b",
        "kimi-k2-instruct",
    ],
)
def test_new_presets_round_trip_through_the_custom_code(key: str, catalog) -> None:
    m = catalog.models[key]
    back = decode_model(encode_model(m), m.name)
    skip = {"source", "published_params", "architecture", "checkpoints"}  # the custom code carries the shape only
    assert back.model_dump(exclude=skip) == m.model_dump(exclude=skip)


# --- properties over random layer layouts -----------------------------------------------------

H100 = load_gpus()[0]["h100-sxm"]


@st.composite
def layouts(draw) -> ModelSpec:
    layers = draw(st.integers(2, 96))
    state = draw(st.integers(0, layers - 1))
    free = draw(st.integers(0, layers - 1 - state))
    local = draw(st.integers(0, layers - state - free - 1))
    chunked = draw(st.booleans())
    window = draw(st.integers(16, 65536))
    kinds = (
        {"chunked_attention_layers": local, "chunked_attention_tokens": window}
        if chunked
        else {"sliding_window_layers": local, "sliding_window_tokens": window}
    )
    return ModelSpec(
        name="random",
        layers=layers,
        hidden=1024,
        heads=16,
        kv_heads=draw(st.sampled_from([1, 2, 4, 8, 16])),
        head_dim=64,
        ffn=2816,
        vocab=32000,
        context_window_tokens=131072,
        state_layers=state,
        state_bytes_per_layer=draw(st.integers(1, 10**8)) if state else 0,
        state_params_per_layer=draw(st.integers(0, 10**7)),
        attention_free_layers=free,
        mlp_free_layers=draw(st.integers(0, layers)),
        attention_sinks=draw(st.booleans()),
        **kinds,
    )


@settings(max_examples=60, deadline=None)
@given(m=layouts(), n=st.integers(1, 1_000_000))
def test_kv_of_a_sequence_is_the_layer_formula(m: ModelSpec, n: int) -> None:
    x = from_specs(H100, m, Scenario(tp=1))
    per = 2 * m.kv_heads * m.head_dim * BF16
    window = m.sliding_window_tokens or m.chunked_attention_tokens
    local = m.sliding_window_layers + m.chunked_attention_layers
    want = per * (m.full_attention_layers * n + local * min(n, window)) + m.state_layers * m.state_bytes_per_layer
    assert float(kv_bytes_per_sequence(x, n)) == pytest.approx(want, rel=1e-12)
    assert float(kv_bytes_per_token(x)) == per * m.attention_layers
    assert decode_model(encode_model(m), m.name) == m  # every layer-kind field travels in a link
    # removing state layers' weights or sinks never adds parameters
    lean = m.model_copy(update={"state_params_per_layer": 0, "attention_sinks": False})
    assert param_counts(lean).total <= param_counts(m).total


@pytest.mark.parametrize(
    ("config", "kw"),
    [
        ("qwen3-next-80b-a3b-thinking.json", {"gpu": "h200", "tp": 2}),
        ("nemotron-h-56b-base-8k.json", {"gpu": "b200", "tp": 2, "spec": True, "draft": "llama-3.2-1b"}),
        ("llama-3.3-nemotron-super-49b-v1.json", {"gpu": "h200", "tp": 2, "prompt": 8000}),
    ],
)
def test_explain_reproduces_every_metric_of_a_hybrid(config: str, kw: dict, catalog) -> None:
    """The Explain tab's substituted arithmetic gives each headline metric for hybrids too
    (the re-evaluation of tests/studies/test_explain.py, on imported configs)."""
    from tests.studies.test_explain import check

    spec = model_from_hf_config((CONFIGS / config).read_text())
    items = check(evaluate(Scenario(model="custom", custom=encode_model(spec), **kw), catalog))
    per_token = next(i for i in items if i.title == "KV cache per token")
    assert f"2 · {spec.attention_layers} · " in per_token.substituted


@pytest.mark.parametrize("config", ["qwen3-next-80b-a3b-thinking.json", "llama-3.3-nemotron-super-49b-v1.json"])
def test_simulator_step_time_equals_the_roofline_for_hybrids(config: str, catalog) -> None:
    """The simulator's fast path (engine/step_time.py) reads the state and writes only the attention
    layers' KV, like roofline.step_cost (the same check as tests/serving for the presets)."""
    import numpy as np

    from planner.engine.roofline import step_cost
    from planner.engine.step_time import step_of
    from planner.sim.simulate import sim_inputs

    spec = model_from_hf_config((CONFIGS / config).read_text())
    _, x = sim_inputs(Scenario(model="custom", custom=encode_model(spec), gpu="h200", tp=2), catalog)
    fast = step_of(x)  # measured kernels where the scenario has tables, else the roofline
    steps = [(64, 1, 9000, 0, 0), (8, 3, 500, 2048, 4096), (0, 1, 0, 8192, 0), (300, 1, 40e3, 0, 0)]
    for seqs, q, ctx, n, past in steps:
        want = float(step_cost(x, seqs=seqs, q=q, ctx=ctx, n=n, past=past).time_s)
        assert fast.scalar_time_s(seqs, q, ctx, [n] if n else [], [past] if n else []) == pytest.approx(want, rel=1e-9)
        if n == 0:
            assert float(fast.decode_time_s(seqs, q, np.array([ctx]))[0]) == pytest.approx(want, rel=1e-9)
