"""Parallel layouts (issue 15): memory per GPU hand-computed from each model's config.json, the layout rules the
engines enforce, the pipeline, expert-parallel and multi-node time terms, and the KV transfer of disaggregated
serving.  The hand computations follow vLLM 0.19 (tools' notes: docs/model.md "Parallelism"):

  fp8 block weights       n · k bytes + ⌈n/128⌉ · ⌈k/128⌉ fp32 scales per matrix (fp8_utils.py:1510-1521)
  MLA q_a / kv_a          ReplicatedLinear: whole on every rank (deepseek_v2.py:457, 481)
  stage split             vLLM get_pp_indices: 61 layers / 2 = [31, 30], 126 / 2 = [63, 63]
  embedding / LM head     bf16, vocabulary padded to 64, on the first / last stage, split over tp
  norms, routers, RoPE    bf16 on every rank (the RoPE cache: max position × rotary dim)
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from planner.engine import memory as mem
from planner.engine import parallel
from planner.engine.evaluate import evaluate, inputs_for, resolve
from planner.engine.roofline import decode, pipeline_parts, prefill, step_cost
from planner.engine.step_time import step_of
from planner.errors import ScenarioError
from planner.model.catalog import load_catalog
from planner.model.parallel_layout import Layout, stage_layers
from planner.model.scenario import Scenario
from planner.units import GiB

DSV3 = dict(model="deepseek-v3", gpu="h100-sxm", wdtype="fp8", quant="fp8-block")
#: 10 MiB: the hand computations put the routers on the MoE layers, the plan spreads norms and routers evenly
#: over a stage's layers (≤ 6 MB on DeepSeek-V3's first stage)
TOLERANCE_BYTES = 10 * 2**20


def fp8(n: int, k: int) -> int:
    """An n × k FP8 matrix with one fp32 scale per 128 × 128 block."""
    return n * k + math.ceil(n / 128) * math.ceil(k / 128) * 4


# DeepSeek-V3 config.json
H, V, L, DENSE, E = 7168, 129_280, 61, 3, 256
Q_LORA, KV_LORA, HEADS, NOPE, ROPE, VDIM = 1536, 512, 128, 128, 64, 128
FFN, MOE_FFN = 18_432, 2048
ATTN_SPLIT = fp8(Q_LORA, HEADS * (NOPE + ROPE)) + fp8(KV_LORA, HEADS * (NOPE + VDIM)) + fp8(HEADS * VDIM, H)
ATTN_REPLICATED = fp8(H, Q_LORA) + fp8(H, KV_LORA + ROPE)
LATENT_NORMS = (Q_LORA + KV_LORA) * 2  # q_a / kv_a layernorms: split with the attention in the plan
DENSE_MLP = fp8(H, 2 * FFN) + fp8(FFN, H)
EXPERT = fp8(H, 2 * MOE_FFN) + fp8(MOE_FFN, H)
VOCAB = V * H * 2
ROPE_CACHE = 163_840 * ROPE * 2


def dsv3_stage_bytes(layers: int, dense: int, first: bool, last: bool, tp: int, experts_per_gpu: float) -> float:
    """One GPU of a DeepSeek-V3 stage: attention over tp (q_a, kv_a whole), dense MLPs and the shared expert over
    tp, ``experts_per_gpu`` routed experts per MoE layer, the embedding / LM head over tp, norms and routers."""
    moe = layers - dense
    split = layers * (ATTN_SPLIT + LATENT_NORMS) + dense * DENSE_MLP + moe * EXPERT + (first + last) * VOCAB
    norms = (2 * layers + last) * H * 2 + moe * E * H * 2
    return split / tp + layers * ATTN_REPLICATED + moe * experts_per_gpu * EXPERT + norms + ROPE_CACHE


def weights_at(stage_index: int | None = None, **kw) -> float:
    x = inputs_for(resolve(Scenario(**kw), CATALOG)).as_arrays()
    st = parallel.stage_at(x, stage_index) if stage_index is not None else None
    return float(mem.target_weight_bytes_per_gpu(x, stage=st))


CATALOG = load_catalog()


def test_vllm_splits_the_layers_with_the_spare_ones_before_the_last_stage():
    assert stage_layers(61, 2) == [31, 30] and stage_layers(61, 4) == [15, 15, 16, 15]
    assert stage_layers(126, 4) == [31, 32, 32, 31] and stage_layers(80, 3) == [27, 27, 26]
    assert stage_layers(61, 2, "sglang") == [30, 31] and stage_layers(80, 3, "sglang") == [26, 27, 27]
    assert stage_layers(61, 2, "trtllm") == [31, 30]


def test_deepseek_v3_fp8_on_two_h100_nodes_tp8_pp2():
    """Stage 0: 31 layers (the 3 dense ones, 28 MoE) and the embedding; stage 1: 30 MoE layers and the LM head:
    38.43 and 40.90 GiB a GPU; stage 1 holds the fewest KV blocks, so it is the plan's."""
    stage0 = dsv3_stage_bytes(31, DENSE, True, False, 8, E / 8)
    stage1 = dsv3_stage_bytes(30, 0, False, True, 8, E / 8)
    assert weights_at(0, **DSV3, tp=8, pp=2) == pytest.approx(stage0, abs=TOLERANCE_BYTES)
    assert weights_at(1, **DSV3, tp=8, pp=2) == pytest.approx(stage1, abs=TOLERANCE_BYTES)
    assert stage0 / GiB == pytest.approx(38.43, abs=0.01) and stage1 / GiB == pytest.approx(40.90, abs=0.01)
    m = evaluate(Scenario(**DSV3, tp=8, pp=2), CATALOG).metrics
    assert m["memory_stage_layers"] == 30 and m["weight_bytes_per_gpu"] == pytest.approx(stage1, abs=TOLERANCE_BYTES)
    assert m["fits"] and m["gpus_per_instance"] == 16
    # the stage's KV: 30 of the 61 layers, the 576-value latent (replicated over tp) in bf16
    assert m["kv_bytes_per_token_per_gpu"] == 30 * 576 * 2


def test_deepseek_v3_fp8_with_expert_parallelism_over_sixteen_gpus():
    """tp16 ep16 (vLLM -tp 16 --enable-expert-parallel): every layer, 16 whole experts a GPU: 40.20 GiB; with
    data-parallel attention (tp1 dp16 ep16) attention, dense layers, the shared expert and the vocabulary are whole
    on every GPU: 55.86 GiB; on one node (tp8 ep8) 79.31 GiB, more than an 80 GB H100 holds."""
    ep16 = dsv3_stage_bytes(L, DENSE, True, True, 16, E / 16)
    assert weights_at(**DSV3, tp=16, ep=16) == pytest.approx(ep16, abs=TOLERANCE_BYTES)
    assert ep16 / GiB == pytest.approx(40.20, abs=0.01)
    # without EP the experts are sliced over the same 16 GPUs: the same bytes (vLLM flattens tp × dp)
    assert weights_at(**DSV3, tp=16) == pytest.approx(ep16, rel=1e-9)
    dp16 = dsv3_stage_bytes(L, DENSE, True, True, 1, E / 16)
    assert weights_at(**DSV3, tp=1, dp=16, ep=16) == pytest.approx(dp16, abs=TOLERANCE_BYTES)
    assert dp16 / GiB == pytest.approx(55.86, abs=0.01)
    one_node = evaluate(Scenario(**DSV3, tp=8, ep=8), CATALOG).metrics
    assert one_node["weight_bytes_per_gpu"] / GiB == pytest.approx(79.31, abs=0.01) and not one_node["fits"]
    # dp engines each hold their own sequences: 16 × the KV one engine holds
    m = evaluate(Scenario(**DSV3, tp=1, dp=16, ep=16, batch=512), CATALOG).metrics
    x = inputs_for(resolve(Scenario(**DSV3, tp=1, dp=16, ep=16, batch=512), CATALOG)).as_arrays()
    per_engine = np.floor(m["kv_budget_bytes_per_gpu"] / float(mem.block_bytes(x)))
    assert m["kv_capacity_tokens"] == 16 * per_engine * 16


# Llama-3.1-405B config.json
D405, L405, V405, F405 = 16_384, 126, 128_256, 53_248
LAYER405 = (D405 * 128 * 128 * 2 + 2 * D405 * 8 * 128 + 3 * D405 * F405) * 2  # bf16


def test_llama_405b_bf16_fits_two_h100_nodes_at_tp8_pp2_not_one():
    """[63, 63] layers: 63 layers / 8 + the embedding or LM head / 8 = 47.28 GiB a GPU (fits); at tp8 on one
    node 126 layers / 8 = 94.53 GiB, more than the 79.19 GiB the driver reports."""
    norms = lambda layers, last: (2 * layers + last) * D405 * 2 + 131_072 * 128 * 2  # noqa: E731
    stage0 = (63 * LAYER405 + V405 * D405 * 2) / 8 + norms(63, 0)
    stage1 = (63 * LAYER405 + V405 * D405 * 2) / 8 + norms(63, 1)
    assert weights_at(0, model="llama-3.1-405b", tp=8, pp=2) == pytest.approx(stage0, abs=TOLERANCE_BYTES)
    assert weights_at(1, model="llama-3.1-405b", tp=8, pp=2) == pytest.approx(stage1, abs=TOLERANCE_BYTES)
    two = evaluate(Scenario(model="llama-3.1-405b", tp=8, pp=2), CATALOG).metrics
    assert two["fits"] and two["weight_bytes_per_gpu"] / GiB == pytest.approx(47.28, abs=0.01)
    assert two["gpus_per_instance"] == 16 and two["memory_stage_layers"] == 63
    one = evaluate(Scenario(model="llama-3.1-405b", tp=8), CATALOG).metrics
    whole = (126 * LAYER405 + 2 * V405 * D405 * 2) / 8 + norms(126, 1)
    assert one["weight_bytes_per_gpu"] == pytest.approx(whole, abs=TOLERANCE_BYTES) and not one["fits"]
    assert whole / GiB == pytest.approx(94.53, abs=0.01)


def test_mixtral_8x7b_expert_parallel_holds_the_same_weights_as_tensor_parallel():
    """ep2 (4 whole experts a GPU) and tp2 (half of each of the 8) hold the same 43.50 GiB; EP pays the load
    imbalance of its busiest rank in the experts' compute."""
    attn = 4096 * 4096 * 2 + 2 * 4096 * 1024
    experts = 8 * 3 * 4096 * 14_336
    split = (32 * (attn + experts) + 2 * 32_000 * 4096) * 2
    every_rank = ((2 * 32 + 1) * 4096 + 32 * 8 * 4096 + 32_768 * 128) * 2
    want = split / 2 + every_rank
    tp2, ep2 = (evaluate(Scenario(model="mixtral-8x7b", tp=2, **kw), CATALOG).metrics for kw in ({}, {"ep": 2}))
    assert tp2["weight_bytes_per_gpu"] == pytest.approx(want, abs=TOLERANCE_BYTES)
    assert ep2["weight_bytes_per_gpu"] == pytest.approx(tp2["weight_bytes_per_gpu"], rel=1e-12)
    assert want / GiB == pytest.approx(43.50, abs=0.01)
    # at a compute-bound prefill the EP busiest rank's experts run min(1.109, 2) × the mean tokens
    assert ep2["ttft_s"] > tp2["ttft_s"]
    assert ep2["decode_comm_s"] == pytest.approx(tp2["decode_comm_s"])  # dp = 1: the same all-reduces


def test_vllm_pipeline_kv_capacity_matches_its_start_up_logs():
    """vLLM 0.19 logs (llm-d-planner, H100, Llama-3.1-8B, max_model_len 8192, u = 0.95): pp2 1,075,312 and pp4
    2,257,264 KV tokens: every stage keeps the smallest stage's block count (the last: LM head and sampler)."""
    for pp, logged in ((2, 1_075_312), (4, 2_257_264)):
        s = Scenario(pp=pp, prompt=8191, output=1, mem_util=0.95, batch=1024, chunk=8192, prefix=0, engine="vllm@0.19")
        m = evaluate(s, CATALOG).metrics
        assert m["kv_capacity_tokens"] == pytest.approx(logged, rel=0.002)
        assert m["memory_stage_layers"] == 32 // pp


# ---------------------------------------------------------------------------- rules the engines enforce


def problems(**kw) -> str:
    try:
        resolve(Scenario(**kw), CATALOG)
    except ScenarioError as exc:
        return "; ".join(exc.problems)
    return ""


def test_layout_errors_name_the_values_that_pass():
    assert "valid ep at tp=2, dp=1: 1, 2" in problems(model="mixtral-8x7b", tp=2, ep=4)
    assert "SGLang needs ep to divide tp × dp = 6" in problems(model="mixtral-8x7b", tp=2, dp=3, ep=4, engine="sglang")
    assert "valid pp: 1 … 32" in problems(pp=33)
    assert problems(dp=2, batch=64) == ""  # vLLM: a dense model's DP ranks are independent engines
    assert "valid dp: 1" in problems(dp=2, batch=64, engine="sglang")  # SGLang's attention DP: replicas instead
    assert "valid ep: 1" in problems(ep=2)
    assert "do not split evenly over 72 ranks" in problems(**DSV3, tp=1, dp=72, ep=72, batch=4096)
    assert problems(**DSV3, tp=1, dp=72, ep=72, batch=4096, redundant_experts=32) == ""
    assert "valid redundant_experts: 0" in problems(model="mixtral-8x7b", tp=2, redundant_experts=2)
    assert problems(**DSV3, tp=1, dp=72, ep=72, batch=4096, eplb=False) == ""  # ⌈256/72⌉ on the first ranks
    # FP8 blocks: DeepSeek-V3's 2,048-wide experts allow at most 16 slices
    assert "not a whole number of 128-wide FP8 blocks" in problems(**DSV3, tp=1, dp=32, batch=32)
    assert problems(**DSV3, tp=1, dp=32, ep=32, batch=32) == ""
    assert "per data-parallel engine" in problems(**DSV3, tp=1, dp=2, ep=2, batch=8192, chunk=1024)


def test_valid_layouts_are_the_ones_the_engine_accepts():
    ds = CATALOG.models["deepseek-v3"]
    layouts = parallel.valid_layouts(ds, CATALOG.gpus["h100-sxm"], 32, block=128)
    labels = {lay.label for lay in layouts}
    assert {"tp8·pp2", "tp16", "tp16·ep16", "tp1·dp16·ep16", "tp2·dp8·ep16"} <= labels
    assert "tp1·dp32" not in labels  # 2,048 / 32 = 64: not whole FP8 blocks
    assert [lay.gpus for lay in layouts] == sorted(lay.gpus for lay in layouts)
    for lay in layouts:
        assert problems(**DSV3, **lay.changes(), batch=lay.dp) == "", lay
    dense = parallel.valid_layouts(CATALOG.models["qwen2.5-7b"], CATALOG.gpus["h100-sxm"], 16)
    assert all(lay.dp == 1 and lay.ep == 1 for lay in dense)
    assert Layout(tp=4, pp=2) in dense and Layout(tp=8) not in dense  # 28 heads are not divisible by 8
    assert Layout(tp=8, pp=2).nodes(8) == 2 and Layout(tp=1, dp=72, ep=72).nodes(72) == 1


# ---------------------------------------------------------------------------- time


def test_pipeline_prompt_takes_the_whole_pass_and_a_full_pipeline_one_stage_per_micro_batch():
    s = Scenario(model="llama-3.1-405b", tp=8, pp=2, prefix=0, hit=0.0, batch=64)
    x = inputs_for(resolve(s, CATALOG)).as_arrays()
    p = pipeline_parts(x, n=2048.0)
    assert float(p.m) == 1 and float(prefill(x).time_s) == pytest.approx(float(p.mix.time_s + p.path_sends))
    # 64 sequences in pp = 2 micro-batches of 32: the bottleneck stage runs both (u = 1: the 126 layers split evenly)
    d = pipeline_parts(x, seqs=64.0, ctx=2176.0)
    assert float(d.m) == 2 and float(d.dec.rank_tokens) == 32
    assert float(decode(x).time_s) == pytest.approx(float(2 * 0.5 * d.dec.time_s + 2 * d.send_dec), rel=1e-9)
    # one sequence leaves the second stage idle: the step is its way out, half of it bubble
    one = decode(x, batch=1.0)
    assert float(one.pipeline_s) > 0.4 * float(one.time_s)


def test_tensor_parallel_across_nodes_pays_the_network():
    """tp16 on H100 spans two nodes: each all-reduce crosses the NICs (NCCL's hierarchical all-reduce)."""
    x8, x16 = (inputs_for(resolve(Scenario(model="llama-3.1-70b", tp=t), CATALOG)).as_arrays() for t in (8, 16))
    size = 256 * 8192 * 2.0
    inside = float(parallel.allreduce_s(x8, 8.0, size))
    across = float(parallel.allreduce_s(x16, 16.0, size))
    per_byte = 1 / (float(x16.link_bytes_per_s * x16.link_frac))
    want = float(x16.scale_out_latency_s) + 2 * 7 / 8 * size * per_byte + 2 * 1 / 2 * size / 8 / 50e9
    assert across == pytest.approx(want) and across > inside
    assert float(parallel.boundaries_crossing_nodes(x16.with_(pp=np.asarray(3.0)))) == 2


def test_expert_dispatch_reproduces_deepep_low_latency_kernels():
    """DeepEP's low-latency table on H800 + CX7 (docs/legacy.md): 128 tokens, top-8, hidden 7168, FP8 dispatch,
    BF16 combine — dispatch 118 / 155 / 173 µs and combine 195 / 273 / 314 µs at EP16 / 32 / 64, within 4 %."""
    x = inputs_for(resolve(Scenario(**{**DSV3, "gpu": "h800"}, tp=1, dp=16, ep=16, batch=16), CATALOG)).as_arrays()
    x = x.with_(scale_out_latency_s=np.asarray(45e-6))  # the kernel alone, no engine overhead per collective
    copies = 128 * 8 * 7168
    for ep, dispatch_us, combine_us in ((16, 118, 195), (32, 155, 273), (64, 173, 314)):
        n = float(ep)
        assert float(parallel.all_to_all_s(x, n, copies * (1 + 4 / 128))) * 1e6 == pytest.approx(dispatch_us, rel=0.04)
        assert float(parallel.all_to_all_s(x, n, copies * 2.0)) * 1e6 == pytest.approx(combine_us, rel=0.04)


def test_two_batch_overlap_hides_part_of_the_exchange():
    on, off = (
        evaluate(Scenario(**DSV3, tp=1, dp=16, ep=16, batch=2048, tbo=t), CATALOG).metrics for t in (True, False)
    )
    assert 0 < off["decode_exchange_s"] == pytest.approx(on["decode_exchange_s"])
    assert on["plain_tpot_s"] < off["plain_tpot_s"] < on["plain_tpot_s"] + off["decode_exchange_s"]


LAYOUTS = [
    dict(model="llama-3.1-405b", tp=8, pp=2),
    dict(model="llama-3.1-8b", tp=16, pp=3),
    dict(**DSV3, tp=16, ep=16),
    dict(**DSV3, tp=1, dp=16, ep=16, batch=512, tbo=True),
    dict(**{**DSV3, "gpu": "h200"}, tp=2, dp=4, pp=2, batch=256),
    dict(model="mixtral-8x7b", tp=2, dp=2, ep=4, pp=2, batch=64, eplb=False),
]


@pytest.mark.parametrize("kw", LAYOUTS, ids=lambda kw: "-".join(f"{k}{v}" for k, v in kw.items() if k in "tpdpeppp"))
def test_the_simulators_fast_step_equals_the_step_cost_under_every_layout(kw):
    x = inputs_for(resolve(Scenario(**kw), CATALOG))
    fast = step_of(x)  # measured kernels where the scenario has tables, else the roofline
    rng = np.random.default_rng(2)
    for _ in range(30):
        seqs, ctx, n = float(rng.integers(0, 600)), float(rng.integers(0, 30_000)), float(rng.integers(0, 8192))
        past = float(rng.integers(0, 30_000)) if n else 0.0
        if seqs == 0 and n == 0:
            continue
        q = float(rng.integers(1, 4))
        want = float(step_cost(x, seqs=seqs, q=q, ctx=ctx, n=n, past=past).time_s)
        assert fast.scalar_time_s(seqs, q, ctx, [n] if n else [], [past] if n else []) == pytest.approx(want, rel=1e-9)
        if n == 0:
            assert float(fast.decode_time_s(seqs, q, np.array([ctx]))[0]) == pytest.approx(want, rel=1e-9)


def test_kv_transfer_moves_each_gpus_share_over_its_own_nic():
    """KV per token: DeepSeek-V3 70,272 B and Llama-3.1-405B 516,096 B (DeepSeek ISCA'25, arXiv 2505.09343,
    Table 1: '70.272 KB', '516.096 KB'); a 4,096-token Llama-405B prompt from tp8 pp2: 2.11 GB, each of the 16
    GPUs its 132 MB over a 50 GB/s NIC."""
    ds = evaluate(Scenario(**DSV3, tp=16, ep=16, prompt=2000), CATALOG).metrics
    assert ds["kv_bytes_per_token"] == 70_272
    ll = evaluate(Scenario(model="llama-3.1-405b", tp=8, pp=2, prompt=4096), CATALOG).metrics
    assert ll["kv_bytes_per_token"] == 516_096
    assert ll["kv_transfer_bytes_per_request"] == 4096 * 516_096
    assert ll["kv_transfer_s"] == pytest.approx(45e-6 + 13.75e-6 + 4096 * 516_096 / 16 / 50e9, rel=1e-6)
    # MLA: every TP rank holds the whole latent, so a decode GPU receives all of it
    assert ds["kv_transfer_s"] == pytest.approx(45e-6 + 13.75e-6 + 2000 * 70_272 / 50e9, rel=1e-6)
