"""Explain items for the efficiency model, throughput, cost, latency and chunked prefill.

The step-time substitutions themselves are ``explain_step.step_time``; the formulas and
sources are in docs/model.md §4–10."""

from __future__ import annotations

import math

from planner.engine import parallel
from planner.engine.chunked import chunk_steps
from planner.engine.inputs import timing_for
from planner.engine.roofline import batched_prefill, ridge_terms
from planner.studies.explain_scenario import Scalars
from planner.studies.explain_step import step_time
from planner.studies.explain_text import ExplainItem, _scalar, _seconds_value, _value, num
from planner.units import S_PER_HOUR, TOKENS_PER_MTOK


def _ridge_item(s: Scalars) -> ExplainItem:
    """The whole decode step's compute_s(B) = memory_s(B)."""
    xa = s.x.as_arrays()
    t = ridge_terms(xa)
    ridge = s.m["ridge_batch"]
    f = _scalar
    pp = f(xa.pp)
    stages = f" · {num(pp)}" if pp > 1 else ""
    return ExplainItem(
        "Compute-bound turn (ridge batch)",
        "B* = max(w − c₀, 0) / ((a_mm + a_att) − (b_act + b_kv)): the batch from which the whole decode step's "
        "arithmetic time (c₀ + B · a) is at least its memory time (w + B · b); w = weights / bw′, c₀ = the small-GEMM "
        "penalty (T½ rows of every GEMM) / peak′, a = matmul + attention arithmetic per sequence, b = activation "
        "+ KV traffic per sequence at ctx = P + O/2; never when a ≤ b (then only w / (a − b) ≤ 0 is shown)"
        + ("; × pp: each of the pp micro-batches turns at B*" if pp > 1 else ""),
        # ten digits: a − b can be a small difference of near-equal numbers
        (f"max({num(f(t.w), 10)} - {num(f(t.c0), 10)}, 0)" if math.isfinite(ridge) else num(f(t.w), 10))
        + f" / (({num(f(t.a_mm), 10)} + {num(f(t.a_att), 10)}) - ({num(f(t.b_act), 10)} + {num(f(t.b_kv), 10)}))"
        + (stages if math.isfinite(ridge) else ""),
        _value(ridge, "sequences")
        if math.isfinite(ridge)
        else "never (each sequence's KV and activation reads take longer than its arithmetic)",
    )


def _rate_items(s: Scalars) -> list[ExplainItem]:
    """TPOT, decode-only and serving tokens/s, the static batch, request latency, and the cost."""
    m, x = s.m, s.x
    B, tp, out_n = num(s.B), num(s.tp), num(s.O)
    if s.r.resolved.scenario.spec:
        tpot_formula, tpot_sub = (
            "speculative step time / E(α, γ)",
            f"{num(m['spec_step_s'])} / {num(m['spec_expected_tokens_per_step'])}",
        )
    else:
        tpot_formula, tpot_sub = "decode step time (speculative decoding off)", num(m["plain_tpot_s"])
    ttft, tpot = num(m["ttft_s"]), num(m["tpot_s"])
    xa = x.as_arrays()
    batched = _scalar(batched_prefill(xa).time_s)
    plain = parallel.plain_layout(xa)
    gpus = tp if plain else num(m["gpus_per_instance"])
    per = "tp" if plain else "(tp · dp · pp)"
    u = num(_scalar(parallel.layer_imbalance(xa)), 10)
    held = ttft if plain else f"{ttft} · {u} / ({num(_scalar(xa.pp))} · {num(_scalar(xa.dp))})"
    return [
        ExplainItem("Time per output token (TPOT)", tpot_formula, tpot_sub, _seconds_value(m["tpot_s"])),
        ExplainItem(
            "Decode tokens/s per GPU",
            f"B / TPOT / {per}  (decode only: every stream generating, no prefill in between)",
            f"{B} / {tpot} / {gpus}",
            _value(m["decode_tokens_per_s_per_gpu"], "tokens/s"),
        ),
        ExplainItem(
            "Output tokens/s per replica (prefill included)",
            "B · O / (B · TTFT + O · TPOT): each request's prefill holds the GPU for TTFT, and its O tokens "
            "share O decode steps with the B − 1 other streams"
            + ("" if plain else "; pp stages and dp ranks prefill several prompts at once: TTFT · u / (pp · dp)"),
            f"{B} · {out_n} / ({B} · {held} + {out_n} · {tpot})",
            _value(m["output_tokens_per_s"], "tokens/s"),
        ),
        ExplainItem(
            "Cost per million output tokens",
            f"price per GPU-hour · {per} / 3600 / output tokens/s · 10^6  (prefill GPU time included)",
            f"{num(float(x.price_per_gpu_hour_usd))} · {gpus} / {num(S_PER_HOUR)} / {num(m['output_tokens_per_s'])} "
            f"· {num(TOKENS_PER_MTOK)}",
            _value(m["cost_per_million_output_tokens_usd"], "USD"),
        ),
        ExplainItem(
            "Request latency",
            "TTFT + (O − 1) · TPOT  (the prefill yields the first token)",
            f"{ttft} + ({out_n} - 1) · {tpot}",
            _seconds_value(m["request_latency_s"]),
        ),
        ExplainItem(
            "Static-batch output tokens/s per GPU",
            f"B · O / (t_prefill(B prompts in one step) + (O − 1) · TPOT) / {per}  "
            "(as TensorRT-LLM's and LMDeploy's benchmarks run a batch)",
            f"{B} · {out_n} / ({num(batched)} + ({out_n} - 1) · {tpot}) / {gpus}",
            _value(m["static_batch_output_tokens_per_s_per_gpu"], "tokens/s"),
        ),
    ]


def _efficiency_items(s: Scalars) -> list[ExplainItem]:
    """The efficiency model's terms in force for this engine × GPU (docs/model.md §4)."""
    m, r = s.m, s.r.resolved
    engine, gpu = r.engine, r.gpu
    t = timing_for(gpu, r.scenario, engine.timing)
    where = f"{engine.name} {engine.version} profile, {t.family} GPUs" if not gpu.calibrated else "measured GPU"
    own = r.scenario.mfu is not None, r.scenario.mbu is not None
    return [
        ExplainItem(
            "Matmul efficiency in force (MFU)",
            "large-GEMM FLOP/s ÷ dense peak: " + ("your MFU" if own[0] else f"fitted, {where}"),
            num(s.mfu),
            num(m["matmul_frac"]),
        ),
        ExplainItem(
            "Bandwidth efficiency in force (MBU)",
            "weight-streaming bytes/s ÷ peak bandwidth: " + ("your MBU" if own[1] else f"fitted, {where}"),
            num(s.mbu),
            num(m["bandwidth_frac"]),
        ),
        ExplainItem(
            "Fixed cost of a prefill step",
            "t_step + L · t_layer  (scheduling and sampling; eager kernel launches per layer)",
            s.overhead(1.0),
            _seconds_value(m["prefill_overhead_s"]),
        ),
        ExplainItem(
            "Fixed cost of a decode step",
            "t_step + L · t_layer,decode  (CUDA-graph replay per layer)",
            s.overhead(0.0),
            _seconds_value(m["decode_overhead_s"]),
        ),
    ]


def _newcomer(chunks, p: str, c: str, b: str) -> str:
    """⌊P / (C − B)⌋ · t_full + t_last with this prompt's numbers (``p``: its new tokens)."""
    t_last = num(float(chunks.last.time_s)) if float(chunks.rest_tokens) > 0 else "0"
    return f"⌊{p} / ({c} - {b})⌋ · {num(float(chunks.full.time_s))} + {t_last}"


def _chunked_items(s: Scalars) -> list[ExplainItem]:
    m = s.m
    xa = s.x.as_arrays()
    P, C, B = s.P, s.C, s.B
    chunks = chunk_steps(xa)
    c = _scalar(chunks.prefill_tokens)
    if c > 0:
        newcomer = _newcomer(chunks, num(P), num(C), num(B))
        h, hit = m["gpu_cache_hit_rate"], m["gpu_cached_tokens"]
        if h > 0 and hit > 0:
            on_hit = _newcomer(chunk_steps(xa, cached_tokens=hit), f"({num(P)} - {num(hit)})", num(C), num(B))
            newcomer = f"{num(h)} · ({on_hit}) + (1 - {num(h)}) · ({newcomer})"
        value = _seconds_value(m["chunked_ttft_s"])
    else:
        newcomer = f"{num(P)} / max({num(C)} - {num(B)}, 0)"
        value = f"never (the {num(B)} decodes take the whole {num(C)}-token step budget)"
    first = min(c, P)
    return [
        ExplainItem(
            "Chunked prefill: newcomer TTFT",
            "⌊P/c⌋ · t_step(B decodes + c prefill tokens, mean past) + t_step(B decodes + remainder r = P − ⌊P/c⌋·c)"
            ",  c = C − B: the step budget C covers the B decodes first (none left when B ≥ C: never); with the "
            "GPUs' prefix cache h · (the same for the P − X_hit new tokens after X_hit) + (1 − h) · (the whole prompt)",
            newcomer,
            value,
        ),
        ExplainItem(
            "Chunked prefill: running streams' max inter-token latency",
            "the largest mixed step: B decodes + min(C − B, P) prefill tokens after max(P − (C − B), 0) cached; "
            + s.step_time_formula,
            step_time(
                s,
                chunks.biggest,
                s.B + first,
                s.B + (1.0 if first > 0 else 0.0),
                first,
                dict(seqs=s.B, ctx=s.P + s.O / 2.0, n=first, past=max(P - c, 0.0)),
            ),
            _seconds_value(m["chunked_max_itl_s"]),
        ),
        ExplainItem(
            "No chunking: running streams' max inter-token latency",
            "t_prefill(P) + t_decode(B)",
            f"{num(m['ttft_nocache_s'])} + {num(m['plain_tpot_s'])}",
            _seconds_value(m["nochunk_max_itl_s"]),
        ),
    ]
