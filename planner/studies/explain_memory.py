"""The Explain tab's memory items: every term of the engine's memory plan (``engine/memory.py``)
with its formula, this scenario's numbers and its source (docs/model.md §1–3).

``memory_items(s)`` takes ``explain_scenario.Scalars`` (the scalars of one evaluated scenario) and
returns the items in the order the plan computes them: KV per token and per sequence, the
driver-reported total, weights, peak activation, non-torch memory, CUDA graphs, the engine's
budget and the KV budget, blocks, KV tokens and concurrency, and the start-up headroom.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.engine import memory as mem
from planner.engine import parallel
from planner.engine.validity import kv_replication_note
from planner.model.quantization import WEIGHT_16BIT_BYTES
from planner.model.weight_plan import resolve_weights
from planner.studies.explain_parallel import weights_item
from planner.studies.explain_scenario import Scalars
from planner.studies.explain_text import ExplainItem, _bytes_value, _value, exact, num
from planner.units import ACTIVATION_BYTES

RULE_NAMES = {0: "vLLM", 1: "SGLang", 2: "TensorRT-LLM"}


def _f(v: Any) -> float:
    return float(np.asarray(v))


def _hybrid_kv_items(s: Scalars) -> list[ExplainItem]:
    """KV of a model with state or no-mixer layers: the attention layers' KV plus the fixed state."""
    m, k, g, h, b = s.m, num(s.model.head_dim), num(s.g), num(s.h), num(s.kv_b)
    L, P, out = num(s.L_kv), num(s.P), num(s.O)
    return [
        ExplainItem(
            "KV cache per token",
            "2 · L_att · g · k · b_kv  (K and V of the attention layers; state layers cache none)",
            f"2 · {L} · {g} · {k} · {b}",
            _bytes_value(m["kv_bytes_per_token"]),
        ),
        ExplainItem(
            "KV cache per token with MHA (baseline)",
            "2 · L_att · h · k · b_kv  (every query head its own K/V)",
            f"2 · {L} · {h} · {k} · {b}",
            _bytes_value(m["kv_bytes_per_token_mha"]),
        ),
        ExplainItem(
            "KV cache per sequence",
            "KV per token per layer · (L_full · (P + O) + L_window · min(P + O, W)) + S  "
            "(S: the state layers' fixed state, docs/model.md §12)",
            f"{num(s.per_layer)} · {s.layer_tokens(f'({P} + {out})')} + {num(s.state)}",
            _bytes_value(m["kv_bytes_per_sequence"]),
        ),
    ]


def _kv_items(s: Scalars) -> list[ExplainItem]:
    """KV cache per token (and the MHA baseline) and per sequence."""
    m, M = s.m, s.model
    if s.L_kv != s.L:  # a hybrid: only its attention layers cache K/V
        return _hybrid_kv_items(s)
    L, P, out = num(s.L), num(s.P), num(s.O)
    replicated = kv_replication_note(M, int(s.tp))
    note = f"; {replicated}" if replicated else ""
    if M.is_mla:
        items = [
            ExplainItem(
                "KV cache per token",
                "L · (r_kv + k_rope) · b_kv  (MLA latent, all layers; every tensor-parallel rank holds a copy)",
                f"{L} · ({num(M.kv_lora_rank)} + {num(M.qk_rope_head_dim)}) · {num(s.kv_b)}",
                _bytes_value(m["kv_bytes_per_token"]),
            )
        ]
    else:
        k = num(M.head_dim)
        items = [
            ExplainItem(
                "KV cache per token",
                "2 · L · g · k · b_kv  (K and V, all layers, all GPUs; fp8 KV = 1 byte)" + note,
                f"2 · {L} · {num(s.g)} · {k} · {num(s.kv_b)}",
                _bytes_value(m["kv_bytes_per_token"]),
            ),
            ExplainItem(
                "KV cache per token with MHA (baseline)",
                "2 · L · h · k · b_kv  (every query head its own K/V)",
                f"2 · {L} · {num(s.h)} · {k} · {num(s.kv_b)}",
                _bytes_value(m["kv_bytes_per_token_mha"]),
            ),
        ]
    items.append(
        ExplainItem(
            "KV cache per sequence",
            "KV per token per layer · (L_full · (P + O) + L_window · min(P + O, W))  (the tokens it holds)",
            f"{num(s.per_layer)} · {s.layer_tokens(f'({P} + {out})')}",
            _bytes_value(m["kv_bytes_per_sequence"]),
        )
    )
    return items


def _weights_item(s: Scalars) -> ExplainItem:
    x, m = s.x, s.m
    b16, tp = num(WEIGHT_16BIT_BYTES), num(s.tp)
    split = (
        f"({num(_f(x.quantized_weight_bytes))} + ({num(_f(x.other_weight_params))} + "
        f"{num(_f(x.embedding_stored_params))}) · {b16})"
    )
    every_rank = f"({num(_f(x.replicated_params))} + {num(_f(x.rope_cache_elements))}) · {b16}"
    draft = _f(m["draft_weight_bytes_per_gpu"])
    formula = (
        "(quantised weights + their scales + (other 16-bit weights + embedding/LM head, vocabulary padded to 64) "
        "· 2 B) / tp + (norms and routers + RoPE cos/sin cache) · 2 B  (vLLM keeps embeddings and the LM head in "
        "16 bit, splits them over tp, and holds norms and the RoPE cache on every rank; quantisation: "
        f"{resolve_weights(s.r.resolved.model, s.r.resolved.scenario).describe()})"
    )
    sub = f"{split} / {tp} + {every_rank}"
    if draft > 0:
        formula += " + the draft model's weights (16 bit, at the target's tp)"
        sub += f" + {exact(draft)}"
    if np.isfinite(_f(x.cal_weights_bytes)):
        return ExplainItem(
            "Weights per GPU",
            "the start-up log's 'Model loading took' figure (cal_weights_gib)",
            exact(_f(x.cal_weights_bytes)),
            _bytes_value(m["weight_bytes_per_gpu"]),
        )
    xa = x.as_arrays()
    if not parallel.plain_layout(xa) or np.any(xa.replicated_linear_bytes > 0):
        return weights_item(s, draft)
    return ExplainItem("Weights per GPU", formula, sub, _bytes_value(m["weight_bytes_per_gpu"]))


def _activation_item(s: Scalars) -> ExplainItem:
    x, m = s.x, s.m
    if np.isfinite(_f(x.cal_activation_bytes)):
        return ExplainItem(
            "Peak activation per GPU",
            "the start-up log's 'torch peak memory increase' (cal_act_gib)",
            exact(_f(x.cal_activation_bytes)),
            _bytes_value(m["activation_bytes_per_gpu"]),
        )
    c = num(_f(mem.step_tokens(x)))
    tp, b = num(s.tp), num(ACTIVATION_BYTES)
    xa = x.as_arrays()
    stage = mem.binding_stage(xa) if np.any(xa.pp > 1) else None
    ffn = f"{num(_f(x.fwd_ffn_factor))} · {num(_f(x.forward_ffn))} / {tp}"
    forward = f"{c} · ({ffn} + {num(_f(x.fwd_hidden_factor))} · {num(_f(x.hidden))}) · {b}"
    keep = f"{num(_f(x.hidden_kept))} · {c} · {num(_f(x.hidden))} · {b}"
    seqs = num(s.B) if _f(x.dp) == 1 else f"{num(s.B)} / {num(_f(x.dp))}"
    sampler = f"{num(_f(x.sampler_bytes_per_logit))} · min({seqs}, {c}) · {num(_f(x.vocab))}"
    if stage is not None and _f(stage.last) == 0:
        sampler = "0"  # the sampler runs on the last pipeline stage only
    moe = exact(_f(mem.activation_terms(xa, stage=stage)["moe"]))
    return ExplainItem(
        "Peak activation per GPU",
        "P₀ + max(C · (a_f · f / tp + a_h · d) · 2 B, k_h · C · d · 2 B + s · min(B, C) · V) + P_moe  "
        "(vLLM's start-up profile run: a dummy forward of C = max_num_batched_tokens tokens, then the sampler over "
        "min(max_num_seqs, C) requests with fp32 full-vocabulary logits; P_moe = C · top_k · (max(2 f_e/tp, d) + "
        "f_e/tp) · 2 B, the fused-MoE caches; P₀ and s fitted on the published vLLM 0.19 logs)",
        f"{num(_f(x.act_base_bytes))} + max({forward}, {keep} + {sampler}) + {moe}",
        _bytes_value(m["activation_bytes_per_gpu"]),
    )


def _other_reserved_items(s: Scalars) -> list[ExplainItem]:
    x, m = s.x, s.m
    tp = int(s.tp)
    band = "1" if tp <= 1 else "2" if tp <= 2 else "≥ 4"
    non_torch = (
        ExplainItem(
            "Non-torch memory per GPU",
            "the start-up log's 'non-torch forward increase memory' (cal_nontorch_gib)",
            exact(_f(x.cal_non_torch_bytes)),
            _bytes_value(m["non_torch_bytes_per_gpu"]),
        )
        if np.isfinite(_f(x.cal_non_torch_bytes))
        else ExplainItem(
            "Non-torch memory per GPU",
            f"N(tp {band}): NCCL and custom all-reduce buffers (tp ≥ 2), cuBLAS workspaces created after the "
            "start-up snapshot; measured on H100 with vLLM 0.19 (engine profile [memory])",
            exact(_f(m["non_torch_bytes_per_gpu"])),
            _bytes_value(m["non_torch_bytes_per_gpu"]),
        )
    )
    in_budget = _f(x.graphs_in_budget) > 0
    factor = _f(x.graph_estimate_factor)
    graphs = ExplainItem(
        "CUDA graphs per GPU",
        "g₀ + g₁ · L  ("
        + (
            "profiled before the KV cache is sized and subtracted from the KV budget as its estimate"
            + (f", {num(factor)} × G" if factor != 1 else " (the captured memory: the V2 runner measures it)")
            + " (vLLM ≥ 0.20 profile_cudagraph_memory)"
            if in_budget
            else "captured after the KV cache is sized: vLLM 0.19 does "
            "not subtract it, so it must fit beside the budget"
        )
        + ")",
        f"{num(_f(x.graph_base_bytes))} + {num(_f(x.graph_per_layer_bytes))} · {num(_f(s.m['memory_stage_layers']))}"
        if not np.isfinite(_f(x.cal_graph_bytes))
        else exact(_f(x.cal_graph_bytes)),
        _bytes_value(m["cuda_graph_bytes_per_gpu"]),
    )
    parts = [exact(m["activation_bytes_per_gpu"]), exact(m["non_torch_bytes_per_gpu"])]
    if in_budget:
        parts.append(exact(m["cuda_graph_charged_bytes_per_gpu"]))
    sglang = _f(x.mem_rule) == 1
    reserve = ExplainItem(
        "Activation and workspace reserve per GPU",
        "0: SGLang's static fraction holds only weights and the KV pool"
        if sglang
        else "peak activation + non-torch memory" + (" + the CUDA graphs' estimate" if in_budget else ""),
        "0" if sglang else " + ".join(parts),
        _bytes_value(m["reserve_bytes_per_gpu"]),
    )
    return [non_torch, graphs, reserve]


def _budget_items(s: Scalars) -> list[ExplainItem]:
    x, m = s.x, s.m
    rule = int(_f(x.mem_rule))
    total, u = _f(x.memory_reported_bytes), _f(x.mem_util)
    base = exact(m["startup_baseline_bytes_per_gpu"])
    w, reserve = exact(m["weight_bytes_per_gpu"]), exact(m["reserve_bytes_per_gpu"])
    t = exact(total)
    if rule == 1:
        kv = f"max(({t} - {base}) · {num(u)} - {w}, 0)"
        kv_formula = "max((T − baseline) · mem_fraction_static − weights, 0)  (SGLang)"
    elif rule == 2:
        kv = f"max({num(u)} · ({t} - {base} - {w} - {reserve}), 0)"
        kv_formula = "max(free_gpu_memory_fraction · (T − baseline − weights − reserve), 0)  (TensorRT-LLM)"
    else:
        kv = f"max(⌈{t} · {num(u)}⌉ - {w} - {reserve}, 0)"
        kv_formula = (
            "max(⌈T · gpu_memory_utilization⌉ − weights − reserve, 0)  (vLLM: request_memory, then "
            "determine_available_memory; the start-up baseline is not charged)"
        )
    return [
        ExplainItem(
            "Total memory per GPU (as the driver reports it)",
            "T: the device memory torch/the driver reports (profile memory_reported_gib, or a log's total_memory); "
            "the engine sizes from it, not from the datasheet's decimal GB",
            exact(total),
            _bytes_value(m["memory_total_bytes_per_gpu"]),
        ),
        ExplainItem(
            "Engine budget per GPU",
            "KV budget (before its floor at 0: what the engine asks for, whether or not the model fits) + weights "
            "+ reserve  (" + RULE_NAMES[rule] + ")",
            f"{kv.removeprefix('max(').removesuffix(', 0)')} + {w} + {reserve}",
            _bytes_value(m["usable_bytes_per_gpu"]),
        ),
        ExplainItem("KV budget per GPU", kv_formula, kv, _bytes_value(m["kv_budget_bytes_per_gpu"])),
    ]


def _blocks_items(s: Scalars) -> list[ExplainItem]:
    x, m = s.x, s.m
    xa = x.as_arrays()
    stage = mem.binding_stage(xa) if np.any(xa.pp > 1) else None
    g = {k: _f(v) for k, v in mem.kv_groups(xa, stage).items()}
    bb = _f(mem.block_bytes(xa))
    dp = _f(xa.dp)
    ranks, per_rank = (f" · {num(dp)}", "; × dp: each data-parallel engine holds its own") if dp > 1 else ("", "")
    n_groups = g["full_groups"] + g["window_groups"]
    blocks = m["kv_blocks"]
    ctx = f"({num(s.P)} + {num(s.O)})"
    bpr = []
    if g["full_groups"]:
        bpr.append(f"{num(g['full_groups'])} · ⌈{ctx} / {num(s.block)}⌉")
    if g["window_groups"]:
        reach = num(_f(mem.window_in_flight_tokens(xa)))
        if _f(xa.chunked_local) > 0:
            bpr.append(f"{num(g['window_groups'])} · ⌈min({num(s.W)} + {reach}, {ctx}) / {num(s.block)}⌉")
        else:
            bpr.append(f"{num(g['window_groups'])} · (⌈min({num(s.W)} - 1 + {reach}, {ctx}) / {num(s.block)}⌉ + 1)")
    alloc = _f(mem.kv_allocated_bytes_per_sequence(xa, s.P + s.O))
    per_block = bb / max(g["layers_per_group"], 1.0)
    # without a draft or a fixed per-sequence state the ratio is vLLM's blocks / blocks per request
    frac = 1.0 if stage is None else _f(stage.layer_frac)
    contiguous = _f(mem.kv_bytes_per_sequence(xa, mem.contiguous_context_tokens(xa))) * frac
    plain = _f(m["draft_weight_bytes_per_gpu"]) == 0 and _f(mem.kv_bytes_per_sequence(xa, 0.0)) == 0
    if _f(xa.mem_rule) == 1:
        return _sglang_pool_items(s, bb, per_block, ranks, contiguous)
    window_rule = (
        "sliding-window layers ⌈min(W − 1 + n_b · C, L) / block⌉ + 1 with n_b = pp + 1 batches in flight (async "
        "scheduling, vLLM ≥ 0.26)"
        if _f(xa.window_in_flight) > 0
        else "sliding-window layers ⌈min(W − 1 + C, L) / block⌉ + 1"
    )
    return [
        ExplainItem(
            "KV blocks",
            "⌊KV budget / (block · KV per token per layer per GPU · layers per group)⌋  (vLLM get_num_blocks; "
            f"{num(n_groups)} KV-cache group(s) of {num(g['layers_per_group'])} layers"
            + ("; the draft's pages share each block" if _f(m["draft_weight_bytes_per_gpu"]) > 0 else "")
            + ")",
            f"⌊{exact(m['kv_budget_bytes_per_gpu'])} / {exact(bb)}⌋",
            _value(blocks, "blocks", f"{num(per_block)} B per block per layer"),
        ),
        ExplainItem(
            "KV cache capacity (tokens)",
            "⌊blocks / groups⌋ · block  (vLLM's 'GPU KV cache size'; with a hybrid model the pool is shared by "
            "its groups" + per_rank + ")",
            f"⌊{num(blocks)} / {num(n_groups)}⌋ · {num(s.block)}{ranks}",
            _value(m["kv_capacity_tokens"], "tokens"),
        ),
        ExplainItem(
            "Max concurrent sequences (paged)",
            "blocks / blocks per request  (vLLM's 'Maximum concurrency for P + O tokens per request'; full "
            "layers ⌈L / block⌉, " + window_rule + "; chunked-local layers without the − 1 and + 1" + per_rank + ")",
            (f"{num(blocks)} / ({' + '.join(bpr)})" if plain else f"{num(blocks)} · {exact(bb)} / {exact(alloc)}")
            + ranks,
            _value(m["max_concurrent_sequences"], "sequences"),
        ),
        ExplainItem(
            "Max concurrent sequences (contiguous)",
            "⌊KV budget / KV(max(window, P + O))⌋  (a contiguous allocator reserves the whole window" + per_rank + ")",
            f"⌊{exact(m['kv_budget_bytes_per_gpu'])} / {exact(contiguous)}⌋{ranks}",
            _value(m["max_concurrent_sequences_contiguous"], "sequences"),
        ),
    ]


def _sglang_pool_items(s: Scalars, bb: float, per_block: float, ranks: str, contiguous: float) -> list[ExplainItem]:
    """SGLang's token pool: one pool of every layer's tokens, or a full pool and a window pool of ratio × its
    tokens (HybridSWAPoolConfigurator); pages of ``block`` tokens; concurrency = pages / pages per request."""
    x, m = s.x, s.m
    xa = x.as_arrays()
    r = _f(x.swa_ratio)
    layers = _f(mem.sglang_pool_layers(xa))
    hybrid = r > 0 and s.win > 0 and s.full > 0
    cell = (
        f"KV per token per layer · (L_full + {num(r)} · L_window) = {num(per_block)} B · {num(layers)}"
        if hybrid
        else f"KV per token per layer · every KV layer (window layers charged in full) = {num(per_block)} B · "
        f"{num(layers)}"
    )
    ctx, page, blocks = f"({num(s.P)} + {num(s.O)})", num(s.block), m["kv_blocks"]
    need = f"⌈{ctx} / {page}⌉"
    if hybrid:
        c = num(_f(mem.step_tokens(xa)))
        need = f"max({need}, ⌈min({num(s.W)} + {c}, {ctx}) / {page}⌉ / {num(r)})"
    plain = _f(m["draft_weight_bytes_per_gpu"]) == 0 and _f(mem.kv_bytes_per_sequence(xa, 0.0)) == 0
    alloc = _f(mem.kv_allocated_bytes_per_sequence(xa, s.P + s.O))
    return [
        ExplainItem(
            "KV blocks",
            "⌊KV budget / (page · cell)⌋  (SGLang's pool in pages, pool_configurator.py; cell = " + cell + ")",
            f"⌊{exact(m['kv_budget_bytes_per_gpu'])} / {exact(bb)}⌋",
            _value(blocks, "blocks", f"{num(per_block)} B per token per layer"),
        ),
        ExplainItem(
            "KV cache capacity (tokens)",
            "pages · page  (SGLang's max_total_num_tokens)",
            f"{num(blocks)} · {page}{ranks}",
            _value(m["kv_capacity_tokens"], "tokens"),
        ),
        ExplainItem(
            "Max concurrent sequences (paged)",
            "pages / pages per request"
            + (f" (the window pool, {num(r)} × the full one, must also hold ⌈min(W + C, L)⌉)" if hybrid else ""),
            (f"{num(blocks)} / {need}" if plain else f"{num(blocks)} · {exact(bb)} / {exact(alloc)}") + ranks,
            _value(m["max_concurrent_sequences"], "sequences"),
        ),
        ExplainItem(
            "Max concurrent sequences (contiguous)",
            "⌊KV budget / KV(max(window, P + O))⌋  (a contiguous allocator reserves the whole window)",
            f"⌊{exact(m['kv_budget_bytes_per_gpu'])} / {exact(contiguous)}⌋{ranks}",
            _value(m["max_concurrent_sequences_contiguous"], "sequences"),
        ),
    ]


def _headroom_item(s: Scalars) -> ExplainItem:
    x, m = s.x, s.m
    outside = []
    if _f(x.graphs_in_budget) == 0:
        outside.append(exact(m["cuda_graph_bytes_per_gpu"]))
    if _f(x.mem_rule) == 1:
        outside += [exact(m["activation_bytes_per_gpu"]), exact(m["non_torch_bytes_per_gpu"])]
    tail = "".join(f" - {o}" for o in outside)
    return ExplainItem(
        "Start-up headroom per GPU",
        "T − start-up baseline − engine budget − what lives outside it (CUDA graphs in vLLM 0.19)  "
        "(below 0 the engine fails at start-up: vLLM's free-memory check or the CUDA-graph capture runs out)",
        f"{exact(_f(x.memory_reported_bytes))} - {exact(m['startup_baseline_bytes_per_gpu'])} - "
        f"{exact(m['usable_bytes_per_gpu'])}{tail}",
        _bytes_value(m["memory_headroom_bytes_per_gpu"])
        if m["memory_headroom_bytes_per_gpu"] >= 0
        else _value(m["memory_headroom_bytes_per_gpu"], "B", "start-up fails"),
    )


def memory_items(s: Scalars) -> list[ExplainItem]:
    """Every memory-plan item of one evaluated scenario (module doc)."""
    return (
        _kv_items(s)
        + _budget_items(s)[:1]
        + [_weights_item(s), _activation_item(s)]
        + _other_reserved_items(s)
        + _budget_items(s)[1:]
        + _blocks_items(s)
        + [_headroom_item(s)]
    )
