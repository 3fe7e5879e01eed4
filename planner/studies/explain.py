"""The formulas behind every headline figure, with this scenario's numbers substituted.

``explain(result)`` returns one ``ExplainItem`` per figure: the formula in
symbols, the same formula with the scenario's numbers (plain arithmetic a reader
can type into a calculator: ``·`` multiply, ``^`` power, ``⌊⌋``/``⌈⌉`` floor and
ceiling, ``min``/``max``/``exp``; ``,`` between digits groups thousands), and the
engine's value with its unit.  The numbers come from the same engine functions
the metrics do, so the substituted arithmetic reproduces each metric (tests
check it).  Formulas and sources: ``docs/model.md``; this module: ``docs/dashboard.md``.
"""

from __future__ import annotations

from planner.engine.evaluate import Result
from planner.engine.prefix_reuse import hit_prefill
from planner.engine.prompt_cache import cacheable_prefix_tokens
from planner.engine.roofline import decode, prefill
from planner.engine.speculative import draft_step_s, verify_step_s
from planner.studies.explain_kernels import kernel_items
from planner.studies.explain_memory import memory_items
from planner.studies.explain_parallel import layout_items
from planner.studies.explain_scenario import COMM, Scalars
from planner.studies.explain_step import step_time
from planner.studies.explain_text import (
    ExplainItem,
    _bytes_value,
    _scalar,
    _seconds_value,
    _value,
    exact,
    num,
)
from planner.studies.explain_timing import _chunked_items, _efficiency_items, _rate_items, _ridge_item
from planner.units import (
    S_PER_MINUTE,
)

__all__ = ["ExplainItem", "exact", "explain", "num"]


def _memory_items(s: Scalars) -> list[ExplainItem]:
    """The memory plan's items (``planner.studies.explain_memory``, which imports this module)."""
    return memory_items(s)


def _step_items(s: Scalars) -> list[ExplainItem]:
    """Prefill and plain decode: FLOP, bytes and step time per GPU."""
    m, x = s.m, s.x
    xa = x.as_arrays()
    P, B, tp = num(s.P), num(s.B), num(s.tp)
    nb, nh, h = s.body_params(), s.head_params(), num(s.h)
    d_pre, d_dec = num(float(x.attention_dim_prefill)), num(float(x.attention_dim_decode))
    kv_tok = exact(m["kv_bytes_per_token_per_gpu"])
    act = s.activation_bytes()
    ctx = f"({P} + {num(s.O)} / 2)"
    if not s.plain:
        return _layout_step_items(s)
    return [
        ExplainItem(
            "Prefill FLOP per GPU",
            "(2 · (N_matmul − N_head) · P + 2 · N_head · 1 + 2 · h · d_att · P · Σ_layers (P + 1)/2) / tp  "
            "(logits for the last token only)",
            f"(2 · {nb} · {P} + 2 · {nh} · 1 + 2 · {h} · {d_pre} · {P} · {s.layer_tokens(f'({P} + 1) / 2')}) / {tp}",
            _value(m["prefill_flop"], "FLOP"),
        ),
        ExplainItem(
            "Prefill bytes per GPU",
            "weights read (all but an untied embedding table) + P · KV per token per GPU (written) "
            "+ P · L · a / tp · 2 B (activations)",
            f"{s.weights_touched(s.P)} + {P} · {kv_tok} + {P} · {act}{s.state_gpu()}",
            _bytes_value(m["prefill_bytes"]),
        ),
        ExplainItem(
            "Prefill of the whole prompt (TTFT without a prefix-cache hit)",
            f"{s.step_time_formula};  {COMM}",
            step_time(s, prefill(xa), s.P, 1.0, s.P),
            _seconds_value(m["ttft_nocache_s"], bool(m["prefill_compute_bound"])),
        ),
        ExplainItem(
            "Decode FLOP per GPU",
            "(2 · N_matmul · B + 2 · h · d_att · B · Σ_layers ctx) / tp,  ctx = P + O/2 (LM head included)",
            f"(2 · ({nb} + {nh}) · {B} + 2 · {h} · {d_dec} · {B} · {s.layer_tokens(ctx)}) / {tp}",
            _value(m["decode_flop"], "FLOP"),
        ),
        ExplainItem(
            "Decode bytes per GPU",
            "weights read + B · (KV(ctx) per GPU · ρ_g + S) + B · KV per token per GPU (written) "
            "+ B · L · a / tp · 2 B  (ρ_g = 1 + (h/max(g, tp) − 1) · ρ: KV loads per GQA group, 1 for a grouped decode "
            "kernel; S: a hybrid's fixed state)",
            f"{s.weights_touched(s.B)} + {B} · ({s.per_layer_gpu()} · {s.layer_tokens(ctx)}{s.kv_reads()}"
            f"{s.state_gpu()}) + {B} · {kv_tok} + {B} · {act}",
            _bytes_value(m["decode_bytes"]),
        ),
        ExplainItem(
            "Decode step time (plain)",
            f"{s.step_time_formula};  {COMM}",
            step_time(s, decode(xa), s.B, s.B, 0.0),
            _seconds_value(m["plain_tpot_s"], bool(m["decode_compute_bound"])),
        ),
    ]


def _layout_step_items(s: Scalars) -> list[ExplainItem]:
    """Prefill and decode under a layout: each figure as the sum of its parts (their layout rules in the formula)."""
    m, xa = s.m, s.x.as_arrays()
    pre, dec = prefill(xa), decode(xa)
    rule = (
        " (the busiest GPU: its rank's tokens through attention and the dense GEMMs over tp, every rank's through "
        "the routed experts over tp · dp; with pp stages u/pp of each micro-batch's work)"
    )

    def total(a, b) -> str:
        return f"{exact(float(a))} + {exact(float(b))}"

    step = dict(seqs=s.B, ctx=s.P + s.O / 2.0)
    return [
        ExplainItem(
            "Prefill FLOP per GPU",
            "matmul FLOP + attention FLOP" + rule,
            total(pre.matmul_flop, pre.attention_flop),
            _value(m["prefill_flop"], "FLOP"),
        ),
        ExplainItem(
            "Prefill bytes per GPU",
            "matmul bytes (weights touched, activations) + attention bytes (KV)" + rule,
            total(pre.matmul_bytes, pre.attention_bytes),
            _bytes_value(m["prefill_bytes"]),
        ),
        ExplainItem(
            "Prefill of the whole prompt (TTFT without a prefix-cache hit)",
            f"{s.step_time_formula};  {COMM}",
            step_time(s, pre, s.P, 1.0, s.P, dict(n=s.P)),
            _seconds_value(m["ttft_nocache_s"], bool(m["prefill_compute_bound"])),
        ),
        ExplainItem(
            "Decode FLOP per GPU",
            "matmul FLOP + attention FLOP" + rule,
            total(dec.matmul_flop, dec.attention_flop),
            _value(m["decode_flop"], "FLOP"),
        ),
        ExplainItem(
            "Decode bytes per GPU",
            "matmul bytes + attention bytes (KV read and written)" + rule,
            total(dec.matmul_bytes, dec.attention_bytes),
            _bytes_value(m["decode_bytes"]),
        ),
        ExplainItem(
            "Decode step time (plain)",
            f"{s.step_time_formula};  {COMM}",
            step_time(s, dec, s.B, s.B, 0.0, step),
            _seconds_value(m["plain_tpot_s"], bool(m["decode_compute_bound"])),
        ),
    ]


def _roofline_items(s: Scalars) -> list[ExplainItem]:
    return _efficiency_items(s) + _step_items(s) + kernel_items(s) + [_ridge_item(s)] + _rate_items(s)


def _speculative_items(s: Scalars) -> list[ExplainItem]:
    m = s.m
    xa = s.x.as_arrays()
    a, g = float(xa.alpha), float(xa.gamma)
    # α that prints as 1 uses the α → 1 limit, γ + 1 (the printed formula would divide by 0)
    e_sub = f"{num(g)} + 1" if float(num(a)) >= 1.0 else f"(1 - {num(a)}^({num(g)} + 1)) / (1 - {num(a)})"
    plain = m["plain_tpot_s"]
    if float(xa.has_draft_model) > 0:
        draft_formula, draft_sub = (
            "t_draft = the draft model's own decode step",
            num(float(draft_step_s(xa, target_step_s=plain))),
        )
    else:
        draft_formula, draft_sub = "t_draft = c · t_decode", f"{num(float(xa.draft_ratio))} · {num(plain)}"
    verify = float(verify_step_s(xa, g + 1.0))
    return [
        ExplainItem(
            "Speculative: expected tokens per step E",
            "E(α, γ) = (1 − α^(γ+1)) / (1 − α)  (γ + 1 when α = 1)",
            e_sub,
            _value(m["spec_expected_tokens_per_step"], "tokens"),
        ),
        ExplainItem(
            "Speculative step time",
            f"γ · t_draft + t_verify(B sequences × (γ + 1) tokens);  {draft_formula}",
            f"{num(g)} · {draft_sub} + {num(verify)}",
            _seconds_value(m["spec_step_s"]),
        ),
        ExplainItem(
            "Speculative speedup",
            "E · t_decode(B) / step time  (< 1: speculation loses)",
            f"{num(m['spec_expected_tokens_per_step'])} · {num(plain)} / {num(m['spec_step_s'])}",
            _value(m["spec_speedup"], "×", "loses" if m["spec_speedup"] < 1 else "wins"),
        ),
    ]


def _cache_items(s: Scalars) -> list[ExplainItem]:
    m, xa = s.m, s.x.as_arrays()
    f = _scalar
    h, w, r = m["cache_hit_rate"], f(xa.cache_write_multiplier), f(xa.cache_read_multiplier)
    X = f(cacheable_prefix_tokens(xa))
    p, o = f(xa.price_in_per_token_usd), f(xa.price_out_per_token_usd)
    P, out = num(s.P), num(s.O)
    rpm = f(xa.requests_per_min_per_prefix)
    if rpm > 0 and f(xa.followup_mode) > 0:
        hit = ExplainItem(
            "Cache hit rate (from traffic and TTL)",
            "1 − exp(−λ · max(TTL − D, 0)), λ = requests/min / 60: each follow-up is sent after the previous "
            "response ends, D = the API's response time, which eats the TTL window",
            f"1 - exp(-{num(rpm)} / {num(S_PER_MINUTE)} · max({num(f(xa.ttl_s))} - {num(f(xa.response_s))}, 0))",
            f"{num(h)} ({h:.1%})",
        )
    elif rpm > 0:
        hit = ExplainItem(
            "Cache hit rate (from traffic and TTL)",
            "1 − exp(−λ · TTL), λ = requests/min / 60: requests on the prefix arrive independently and every "
            "request refreshes the entry, so one hits when the previous came less than a TTL before it",
            f"1 - exp(-{num(rpm)} / {num(S_PER_MINUTE)} · {num(f(xa.ttl_s))})",
            f"{num(h)} ({h:.1%})",
        )
    else:
        hit = ExplainItem("Cache hit rate", "the hit-rate input", num(h), f"{num(h)} ({h:.1%})")
    below = (
        ""
        if m["cache_applies"]
        else f"  (the {num(f(xa.prefix_tokens))}-token prefix is below the "
        f"{num(f(xa.min_cacheable_tokens))}-token minimum: X = 0)"
    )
    without = m["nocache_cost_per_request_usd"]
    return [
        hit,
        ExplainItem(
            "Prompt cache: cost per request",
            "(h · r + (1 − h) · w) · X · p + (P − X) · p + O · o" + below,
            f"({num(h)} · {num(r)} + (1 - {num(h)}) · {num(w)}) · {num(X)} · {num(p)} + ({P} - {num(X)}) · {num(p)} "
            f"+ {out} · {num(o)}",
            _value(m["cache_cost_per_request_usd"], "USD"),
        ),
        ExplainItem(
            "No cache: cost per request", "P · p + O · o", f"{P} · {num(p)} + {out} · {num(o)}", _value(without, "USD")
        ),
        ExplainItem(
            "Prompt cache saving",
            "1 − cost with cache / cost without",
            f"1 - {num(m['cache_cost_per_request_usd'], 10)} / {num(without, 10)}" if without > 0 else "0",
            f"{num(m['cache_saving_frac'])} ({m['cache_saving_frac']:.1%})",
        ),
        ExplainItem(
            "Prompt cache break-even hit rate",
            "h* = (w − 1) / (w − r)  (caching pays above it)",
            f"({num(w)} - 1) / ({num(w)} - {num(r)})",
            num(m["cache_break_even_hit_rate"]),
        ),
    ]


def _gpu_cache_items(s: Scalars) -> list[ExplainItem]:
    """The GPUs' own prefix cache (``engine.prefix_reuse``): what a hit reads and the TTFT it gives."""
    m, xa = s.m, s.x.as_arrays()
    h, hit = m["gpu_cache_hit_rate"], m["gpu_cached_tokens"]
    P, X, block = num(s.P), num(_scalar(xa.prefix_tokens)), num(_scalar(xa.block_tokens))
    return [
        ExplainItem(
            "Tokens a prefix-cache hit reads",
            "X_hit = block · ⌊min(X, P − 1) / block⌋  (whole KV blocks, the last prompt token recomputed: vLLM "
            "get_computed_blocks)",
            f"{block} · ⌊min({X}, {P} - 1) / {block}⌋",
            _value(hit, "tokens"),
        ),
        ExplainItem(
            "TTFT on a prefix-cache hit",
            f"{s.step_time_formula} for the P − X_hit new tokens after X_hit cached;  {COMM}",
            step_time(s, hit_prefill(xa), s.P - hit, 1.0, s.P - hit, dict(n=s.P - hit, past=hit)),
            _seconds_value(m["ttft_hit_s"]),
        ),
        ExplainItem(
            "Time to first token (TTFT)",
            "h · t_prefill(hit) + (1 − h) · t_prefill(whole prompt)  (on an idle replica; h: the GPUs' prefix-cache "
            "hit rate)",
            f"{num(h)} · {num(m['ttft_hit_s'])} + (1 - {num(h)}) · {num(m['ttft_nocache_s'])}",
            _seconds_value(m["ttft_s"]),
        ),
    ]


def explain(result: Result) -> list[ExplainItem]:
    """Every headline figure of ``result`` with its formula and substituted numbers."""
    s = Scalars(result)
    layout = [] if s.plain else layout_items(s)
    return (
        _memory_items(s)
        + _roofline_items(s)
        + _gpu_cache_items(s)
        + _chunked_items(s)
        + _speculative_items(s)
        + _cache_items(s)
        + layout
    )
