"""Explain items of the parallel layout (docs/model.md "Parallelism"): the GPUs of an instance, the pipeline
stage the memory plan describes and its weights, the MoE exchange, the stage sends and the pipeline cycle, the
communication share and the disaggregated KV transfer — each with this scenario's numbers.

``step_substitution`` writes a step's time when the plain formula (``explain_step.step_time``) does not
apply: the busiest rank's pass as its parts, and with pipeline stages the cycle max(busy, path) of
``roofline.pipeline_parts``.  Every substituted line re-evaluates to its metric (tests/studies/test_explain.py).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from planner.engine import memory as mem
from planner.engine import parallel
from planner.engine.roofline import StepCost, decode, decode_context_tokens, pipeline_parts
from planner.model.quantization import WEIGHT_16BIT_BYTES
from planner.studies.explain_scenario import Scalars
from planner.studies.explain_text import ExplainItem, _bytes_value, _seconds_value, _value, exact, num


def _f(v: Any) -> float:
    return float(np.asarray(v))


def _part(s: Scalars, c: float, m: float) -> str:
    if s.o == 1.0:
        return f"max({num(c, 10)}, {num(m, 10)})"
    return f"(max({num(c, 10)}, {num(m, 10)}) + (1 - {num(s.o)}) · min({num(c, 10)}, {num(m, 10)}))"


def pass_substitution(s: Scalars, cost: StepCost) -> str:
    """t_0 + R(c_mm, m_mm) + R(c_att, m_att) + t_comm of one pass, each part's value."""
    mm = _part(s, _f(cost.matmul_compute_s), _f(cost.matmul_memory_s))
    att = _part(s, _f(cost.attention_compute_s), _f(cost.attention_memory_s))
    text = f"{num(_f(cost.overhead_s), 10)} + {mm} + {att} + {num(_f(cost.comm_s), 10)}"
    if _f(cost.hidden_s) > 0:  # two-batch overlap: min(compute, exchange) hidden
        work = _f(cost.matmul_s + cost.attention_s)
        share = num(_f(s.x.as_arrays().tbo))
        text += f" - {share} · min({num(work, 10)}, {num(_f(cost.exchange_s), 10)})"
    return text


def step_substitution(s: Scalars, cost: StepCost, step: dict[str, float]) -> str:
    """A step's time under the layout (module doc); ``step``: the arguments of ``roofline.step_cost``."""
    x = s.x.as_arrays()
    if not np.any(x.pp > 1):
        return pass_substitution(s, cost)
    p = pipeline_parts(x, **step)
    m, mp, u = num(_f(p.m)), num(_f(p.m_p)), num(_f(p.u_pp), 10)
    dec, mix = num(_f(p.dec.time_s), 10), num(_f(p.mix.time_s), 10)
    sd, sm = num(_f(p.send_dec), 10), num(_f(p.send_mix), 10)
    busy = f"{u} · (({m} - {mp}) · {dec} + {mp} · {mix}) + ({m} - {mp}) · {sd} + {mp} · {sm}"
    path = f"({mp} - 1) · ({u} · {mix} + {sm}) + {mix} + {num(_f(p.path_sends), 10)}"
    return f"max({busy}, {path})"


def _stage(s: Scalars) -> parallel.Stage:
    x = s.x.as_arrays()
    return mem.binding_stage(x) if np.any(x.pp > 1) else parallel.whole_model(x)


def weights_item(s: Scalars, draft: float) -> ExplainItem:
    """Weights per GPU of the binding stage under the layout (``memory.target_weight_bytes_per_gpu``)."""
    x, m = s.x.as_arrays(), s.m
    st = _stage(s)
    b16 = num(WEIGHT_16BIT_BYTES)
    split = _f(x.quantized_weight_bytes) + (_f(x.other_weight_params) + _f(x.embedding_stored_params)) * 2.0
    experts, dense, shared = _f(x.expert_weight_bytes), _f(x.dense_mlp_weight_bytes), _f(x.shared_expert_weight_bytes)
    repl = _f(x.replicated_linear_bytes)
    rest = split - experts - dense - shared - repl - _f(x.embedding_stored_params) * 2.0
    L, Ls = num(s.L), num(_f(st.layers))
    big_d, big_m = max(_f(x.dense_layers_count), 1.0), max(_f(x.moe_layers), 1.0)
    ds, ms = _f(st.dense_frac) * big_d, _f(st.moe_frac) * big_m
    tables = _f(st.first) + _f(st.last) if _f(x.pp) > 1 else 2.0 - _f(x.tied_embeddings)
    tp, dp, ep, e = num(s.tp), num(_f(x.dp)), num(_f(x.ep)), _f(x.experts)
    by_tp = (
        f"({exact(rest)} · {Ls} / {L} + {exact(dense)} · {num(ds)} / {num(big_d)} + {exact(shared)} · {num(ms)} / "
        f"{num(big_m)} + {exact(_f(x.vocab_table_params))} · {b16} · {num(tables)}) / {tp}"
    )
    r = _f(x.redundant_experts)
    physical = f"({num(e)} + {num(r)})" if r else num(e)
    routed = (
        f" + {exact(experts)} · {num(ms)} / {num(big_m)} · ⌈{physical} / {ep}⌉ / {num(e)} / ({tp} · {dp} / {ep})"
        if e > 0
        else ""
    )
    own = (
        f" + {exact(repl)} · {Ls} / {L} + ({exact(_f(x.replicated_params))} · {Ls} / {L} + "
        f"{exact(_f(x.rope_cache_elements))}) · {b16}"
    )
    formula = (
        "[rest · L_s/L + dense MLPs · D_s/D + shared experts · M_s/M + vocabulary tables · 2 B] / tp + routed experts "
        "· M_s/M · ⌈(E + r)/ep⌉ / E / moe_tp + replicated linears · L_s/L + (norms, routers · L_s/L + RoPE) · 2 B  "
        "(the stage that holds the fewest KV blocks, L_s of its L layers; moe_tp = tp · dp / ep; MLA's q_a and kv_a "
        "projections are whole on every rank; the embedding on the first stage, the LM head on the last)"
    )
    sub = by_tp + routed + own + (f" + {exact(draft)}" if draft > 0 else "")
    return ExplainItem("Weights per GPU", formula, sub, _bytes_value(m["weight_bytes_per_gpu"]))


def _decode_step(s: Scalars) -> dict[str, float]:
    return dict(seqs=s.B, ctx=_f(decode_context_tokens(s.x.as_arrays())))


def _exchange_item(s: Scalars) -> ExplainItem:
    """The decode step's MoE exchange (``parallel.moe_comm_s``), per micro-batch pass × the stage's share."""
    x, m = s.x.as_arrays(), s.m
    n, g = _f(parallel.stage_gpus(x)), _f(x.gpus_per_node)
    micro = _f(pipeline_parts(x, **_decode_step(s)).m) if _f(x.pp) > 1 else 1.0
    t_all = s.B / micro
    inside = n <= g
    lat = _f(x.collective_latency_s) if inside else _f(x.scale_out_latency_s)
    d, k, dp, tp = num(_f(x.hidden)), num(_f(x.experts_per_token)), num(_f(x.dp)), num(s.tp)
    link = f"({num(_f(x.link_bytes_per_s))} · {num(_f(x.link_frac))})"
    so = num(_f(x.scale_out_bytes_per_s))
    if _f(x.ep) > 1:
        tokens = f"max({num(t_all / _f(x.dp))}, {num(_f(parallel.expert_imbalance(x)))} · {num(t_all)} / {dp}) / {tp}"
        per_byte = (
            f"max((min({num(n)}, {num(g)}) - 1) / {num(n)} / {link}, max({num(n)} - {num(g)}, 0) / {num(n)} / {so})"
        )
        per_pass = f"2 · {num(lat)} + {tokens} · {k} · {d} · ({num(_f(x.dispatch_bytes_per_element))} + 2) · {per_byte}"
        formula = (
            "per MoE layer a DeepEP dispatch + combine: 2 · α + X · k · d · (b_dispatch + 2 B) · max(f_in / "
            "(link · η), f_out / scale-out), X = max(T_rank, imbalance · T_all / dp) / tp the tokens a GPU sends "
            "or receives, f_in / f_out the copies staying in / leaving its node"
        )
    else:
        gn, nodes = num(min(n, g)), num(np.ceil(n / g))
        size = f"{num(t_all)} · {d} · 2"
        per_pass = (
            f"2 · ({num(lat)} + ({gn} - 1) / {gn} · {size} / {link} + ({nodes} - 1) / {nodes} · {size} / {gn} / {so})"
        )
        formula = (
            "per MoE layer vLLM's all-gather + reduce-scatter of every token over the tp · dp GPUs: each "
            "α + (g − 1)/g · S / (link · η) + (N − 1)/N · (S / g) / scale-out (g GPUs per node on N nodes)"
        )
    sub = f"{num(_f(x.moe_layers))} · ({per_pass})"
    if _f(x.pp) > 1:
        sub = f"{num(_f(parallel.layer_imbalance(x) / x.pp), 10)} · {num(micro)} · {sub}"
        formula += "; × u/pp · m: the bottleneck stage's share of its m micro-batches"
    return ExplainItem("MoE exchange per decode step", formula, sub, _seconds_value(m["decode_exchange_s"]))


def _pipeline_items(s: Scalars) -> list[ExplainItem]:
    x, m = s.x.as_arrays(), s.m
    p = pipeline_parts(x, **_decode_step(s))
    cost = decode(x)
    cross = _f(parallel.boundaries_crossing_nodes(x))
    far = cross > 0
    lat = _f(x.scale_out_latency_s) if far else _f(x.collective_latency_s)
    bw = num(_f(x.scale_out_bytes_per_s)) if far else f"({num(_f(x.link_bytes_per_s))} · {num(_f(x.link_frac))})"
    rank = num(_f(p.dec.rank_tokens))
    base, spare = np.floor(s.L / _f(x.pp)), _f(m["memory_stage_layers"]) - np.floor(s.L / _f(x.pp))
    combined = _f(cost.overhead_s + cost.gpu_s)
    return [
        ExplainItem(
            "Pipeline stage of the memory plan",
            "⌊L / pp⌋, + 1 on the stages the engine gives a spare layer (vLLM: those before the last; SGLang: the "
            "last; TensorRT-LLM: the first): the stage holding the fewest KV blocks, whose count every stage keeps",
            f"⌊{num(s.L)} / {num(_f(x.pp))}⌋ + {num(spare)}",
            _value(m["memory_stage_layers"], "layers", f"of {num(s.L)}; ⌊L / pp⌋ = {num(base)}"),
        ),
        ExplainItem(
            "Stage sends per decode step",
            "m · (α + 2 · T_rank · d · 2 B / tp / bw): the bottleneck stage sends each of its m micro-batches' "
            "hidden states and residual, each TP rank its 1/tp slice (over the network when a boundary crosses nodes)",
            f"{num(_f(p.m))} · ({num(lat)} + 2 · {rank} · {num(_f(x.hidden))} · 2 / {num(s.tp)} / {bw})",
            _seconds_value(m["decode_send_s"]),
        ),
        ExplainItem(
            "Pipeline time beyond the bottleneck stage's work (decode)",
            "max(busy, path) − the combined parts: the bubble when fewer than pp micro-batches are in flight, and "
            "sends on a micro-batch's way out",
            f"max({num(_f(p.busy_s), 10)}, {num(_f(p.path_s), 10)}) - {num(combined, 10)}",
            _seconds_value(m["decode_pipeline_s"]),
        ),
    ]


def _kv_transfer_item(s: Scalars) -> ExplainItem:
    x, m = s.x.as_arrays(), s.m
    per_layer = _f(x.kv_elements_per_token_per_layer * x.kv_bytes_per_element)
    total = _f(x.full_attention_layers + x.window_layers) * per_layer
    senders = _f(x.pp) * (min(s.tp, s.g) if not s.model.is_mla else 1.0)
    share = np.ceil(s.g / s.tp) / s.g if not s.model.is_mla else 1.0
    held = total * _f(parallel.max_stage_layers(x)) / s.L * share
    return ExplainItem(
        "KV transfer to a decode instance",
        "α + P · max(KV per token / senders, a decode GPU's KV per token) / scale-out: after the prefill each "
        "prefill GPU sends its share over its own NIC (senders = pp · min(tp, g); MLA: pp, the latent is on "
        "every TP rank) and each decode GPU receives what it holds (vLLM NixlConnector; this layout on both sides)",
        f"{num(_f(x.scale_out_latency_s))} + {num(s.P)} · max({exact(total)} / {num(senders)}, {exact(held)}) / "
        f"{num(_f(x.scale_out_bytes_per_s))}",
        _seconds_value(m["kv_transfer_s"]),
    )


def layout_items(s: Scalars) -> list[ExplainItem]:
    """The layout's own items (module doc)."""
    x, m = s.x.as_arrays(), s.m
    items = [
        ExplainItem(
            "GPUs per instance",
            "tp · dp · pp  (dp data-parallel attention ranks of tp GPUs each, in pp pipeline stages)",
            f"{num(s.tp)} · {num(_f(x.dp))} · {num(_f(x.pp))}",
            _value(m["gpus_per_instance"], "GPUs"),
        )
    ]
    if _f(x.pp) > 1:
        items += _pipeline_items(s)
    if _f(x.dp) > 1 and _f(x.moe_layers) > 0:
        items.append(_exchange_item(s))
    cost = decode(x)
    items += [
        ExplainItem(
            "Communication share of a decode step",
            "t_comm / step time: all-reduces, the MoE exchange and stage sends over the decode step",
            f"{num(_f(cost.comm_s), 10)} / {num(_f(cost.time_s), 10)}",
            f"{num(m['decode_comm_frac'])} ({m['decode_comm_frac']:.1%})",
        ),
        _kv_transfer_item(s),
    ]
    return items
