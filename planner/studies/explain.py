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

import numpy as np

from planner.engine.evaluate import Result
from planner.engine.parallel import layer_imbalance
from planner.engine.prompt_cache import cache_hit_prefill, cacheable_prefix_tokens
from planner.engine.roofline import StepCost, decode, micro_batches, prefill
from planner.engine.speculative import draft_step_s, verify_step_s
from planner.studies.explain_parallel import LAYOUT_NOTE, is_plain, layout_items, step_substitution
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
    ACTIVATION_BYTES,
    S_PER_MINUTE,
)

__all__ = ["ExplainItem", "exact", "explain", "num"]


class _Scenario:
    """Scalars of one evaluated scenario, named as in the formulas."""

    def __init__(self, r: Result):
        x = r.inputs
        self.r, self.x, self.m, self.model = r, x, r.metrics, r.resolved.model
        f = _scalar
        self.L, self.h, self.g = f(x.layers), f(x.heads), f(x.kv_heads)
        self.tp, self.B, self.P, self.O = f(x.tp), f(x.batch), f(x.prompt_tokens), f(x.output_tokens)
        self.C, self.block = f(x.chunk_tokens), f(x.block_tokens)
        self.full, self.win, self.W = f(x.full_attention_layers), f(x.window_layers), f(x.window_tokens)
        self.peak, self.mfu, self.bw, self.mbu = f(x.peak_flop_per_s), f(x.mfu), f(x.bandwidth_bytes_per_s), f(x.mbu)
        self.a = f(x.activation_elements_per_token_per_layer)
        self.kv_b = f(x.kv_bytes_per_element)
        self.per_layer = f(x.kv_elements_per_token_per_layer) * self.kv_b
        # layers that cache K/V (state and no-mixer layers of hybrids do not) and their fixed state
        self.L_kv, self.state = self.full + self.win, f(x.state_bytes_per_sequence)
        self.o, self.a_c, self.a_m = (
            f(x.compute_memory_overlap),
            f(x.attention_compute_frac),
            f(x.attention_bandwidth_frac),
        )
        self.peak16, self.half = f(x.attention_peak_flop_per_s), f(x.matmul_half_tokens)
        self.t_step, self.t_layer, self.t_layer_dec = (
            f(x.step_overhead_s),
            f(x.layer_overhead_s),
            f(x.decode_layer_overhead_s),
        )
        self.rho = f(x.gqa_reread_frac)
        self.plain = is_plain(self)
        self.gpus = f(r.metrics["gpus_per_instance"])

    @property
    def step_time_formula(self) -> str:
        plain = STEP_TIME if self.o == 1.0 else STEP_TIME_REFINED
        return plain if self.plain else plain + LAYOUT_NOTE

    # ------------------------------------------------------------ shared sub-expressions

    def layer_tokens(self, tokens: str) -> str:
        """Σ over layers of tokens cached/attended: L_full · n + L_window · min(n, W)."""
        if self.win == 0:
            return f"{num(self.full)} · {tokens}"
        return f"({num(self.full)} · {tokens} + {num(self.win)} · min({tokens}, {num(self.W)}))"

    def state_gpu(self) -> str:
        """The hybrid state layers' fixed state of one sequence on one GPU, as a term to add ('' when none)."""
        return f" + {num(self.state)} / {num(self.tp)}" if self.state else ""

    def per_layer_gpu(self) -> str:
        """KV bytes per token per layer on one GPU: ⌈g/tp⌉ of the g heads (the MLA latent is replicated)."""
        if self.model.is_mla:
            return num(self.per_layer)
        return f"{num(self.per_layer)} · ⌈{num(self.g)} / {num(self.tp)}⌉ / {num(self.g)}"

    def weights_touched(self, tokens: float) -> str:
        x = self.x
        bw, tp = num(float(x.weight_bytes_per_param)), num(self.tp)
        read = float(x.total_params) - float(x.lookup_params)  # an untied embedding is a lookup, not a read
        if float(x.moe_layers) == 0:
            return f"{num(read)} · {bw} / {tp}"
        e, k, ml, ep = float(x.experts), float(x.experts_per_token), float(x.moe_layers), float(x.expert_params)
        dense = read - ml * e * ep
        experts_hit = f"{num(e)} · (1 - (1 - {num(k)} / {num(e)})^{num(tokens)})"
        return f"({num(dense)} + {num(ml)} · {experts_hit} · {num(ep)}) · {bw} / {tp}"

    def body_params(self) -> str:
        """N_matmul − N_head: the matmul parameters that run for every token."""
        return num(float(self.x.matmul_params - self.x.lm_head_params))

    def head_params(self) -> str:
        """N_head: the LM head, run only for tokens that need logits."""
        return num(float(self.x.lm_head_params))

    def activation_bytes(self) -> str:
        """Activation traffic of one token through the matmuls: L · a / tp · 2 B."""
        return f"{num(self.L)} · {num(self.a)} / {num(self.tp)} · {num(ACTIVATION_BYTES)}"

    def comm(self, tokens: float) -> str:
        if self.tp <= 1:
            return "0"
        x = self.x
        return (
            f"2 · {num(self.L)} · (2 · ({num(self.tp)} - 1) / {num(self.tp)} · {num(tokens)} · "
            f"{num(float(x.hidden))} · 2 / ({num(float(x.link_bytes_per_s))} · {num(float(x.link_frac))}) + "
            f"{num(float(x.collective_latency_s))})"
        )

    def kv_reads(self) -> str:
        """ρ_g = 1 + (h/g − 1)·ρ, or nothing when each KV group is loaded once."""
        if self.rho == 0 or self.model.is_mla or self.g == self.h:
            return ""
        return f" · (1 + ({num(self.h)} / {num(self.g)} - 1) · {num(self.rho)})"

    def overhead(self, prefill_tokens: float) -> str:
        """t_0 = t_step + L · t_layer (eager with prefill tokens, CUDA-graph replay without); with pipeline
        stages the bottleneck stage's share u/pp of its m micro-batches' (m = 1 for a lone prompt)."""
        layer = self.t_layer if prefill_tokens > 0 else self.t_layer_dec
        plain = f"{num(self.t_step)} + {num(self.L)} · {num(layer)}"
        xa = self.x.as_arrays()
        if not np.any(xa.pp > 1):
            return plain
        m = 1.0 if prefill_tokens > 0 else float(np.asarray(micro_batches(xa, self.B, 0.0)[0]))
        return f"{num(float(np.asarray(layer_imbalance(xa) / xa.pp)), 10)} · {num(m)} · ({plain})"

    def matmul_compute(self, tokens: float, logit_tokens: float) -> str:
        """c_mm: the GEMMs at T + T½ rows (the experts at k·T + E_hit·T½) over peak · MFU."""
        x = self.x
        tp, half = num(self.tp), num(self.half)
        peak = f"({num(self.peak)} · {num(self.mfu)})"
        routed = float(x.moe_layers * x.experts_per_token * x.expert_params)
        body = num(float(x.matmul_params - x.lm_head_params) - routed)
        dense = (
            f"(2 · {body} · ({num(tokens)} + {half}) + 2 · {self.head_params()} · ({num(logit_tokens)} + {half})) "
            f"/ {tp} / {peak}"
        )
        if float(x.moe_layers) == 0:
            return dense
        e, k = float(x.experts), float(x.experts_per_token)
        hit = f"{num(e)} · (1 - (1 - {num(k)} / {num(e)})^{num(tokens)})"
        return (
            f"{dense} + 2 · {num(float(x.moe_layers))} · {num(float(x.expert_params))} · ({num(k)} · {num(tokens)} "
            f"+ {hit} · {half}) / {tp} / ({num(self.peak)} · {num(self.mfu)} · {num(float(x.moe_matmul_frac))})"
        )

    def step_time(
        self,
        cost: StepCost,
        tokens: float,
        logit_tokens: float,
        prefill_tokens: float,
        step: dict[str, float] | None = None,
    ) -> str:
        """t_0 + R(c_mm, m_mm) + R(c_att, m_att) + t_comm with this step's numbers; beyond one node's tensor
        parallelism, the layout's (``explain_parallel.step_substitution``, from ``step``: step_cost's arguments)."""
        if not self.plain:
            return step_substitution(self, cost, step or {})

        def part(c: str, m: str) -> str:
            if self.o == 1.0:
                return f"max({c}, {m})"
            return f"(max({c}, {m}) + (1 - {num(self.o)}) · min({c}, {m}))"

        mm = part(
            self.matmul_compute(tokens, logit_tokens),
            f"{num(float(cost.matmul_bytes))} / ({num(self.bw)} · {num(self.mbu)})",
        )
        att = part(
            f"{num(float(cost.attention_flop))} / ({num(self.peak16)} · {num(self.a_c)})",
            f"{num(float(cost.attention_bytes))} / ({num(self.bw)} · {num(self.a_m)})",
        )
        return f"{self.overhead(prefill_tokens)} + {mm} + {att} + {self.comm(tokens)}"


STEP_TIME = (
    "t_step + L · t_layer + max(c_mm, m_mm) + max(c_att, m_att) + t_comm;  "
    "c_mm = [2 · N_body · (T + T½) + 2 · N_head · (T_logits + T½)] / tp / (peak · MFU) "
    "(+ MoE experts: 2 · L_moe · n_e · (k · T + E_hit · T½) / tp / (peak · MFU · η_moe)), "
    "m_mm = B_mm / (bandwidth · MBU), c_att = F_att / (peak₁₆ · a_c), m_att = B_att / (bandwidth · a_m)  "
    "(t_step, t_layer, T½, MFU, MBU, a_c, a_m, η_moe: the engine profile's fitted values; docs/model.md §4–6)"
)
STEP_TIME_REFINED = (
    STEP_TIME.replace("max(c_mm, m_mm)", "R(c_mm, m_mm)").replace("max(c_att, m_att)", "R(c_att, m_att)")
    + ",  R(c, m) = max(c, m) + (1 − o) · min(c, m) (o: the calibrated profile's measured overlap)"
)
COMM = (
    "t_comm = 2 · L · (2 · (tp − 1)/tp · T · d · 2 B / (link · η_link) + latency) when tp > 1 "
    "(latency: the link's + the engine's per-collective overhead)"
)


def _memory_items(s: _Scenario) -> list[ExplainItem]:
    """The memory plan's items (``planner.studies.explain_memory``, which imports this module)."""
    from planner.studies.explain_memory import memory_items

    return memory_items(s)


def _step_items(s: _Scenario) -> list[ExplainItem]:
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
            "Time to first token (TTFT)",
            f"{s.step_time_formula};  {COMM}",
            s.step_time(prefill(xa), s.P, 1.0, s.P),
            _seconds_value(m["ttft_s"], bool(m["prefill_compute_bound"])),
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
            "+ B · L · a / tp · 2 B  (ρ_g = 1 + (h/g − 1) · ρ: KV loads per GQA group, 1 for a grouped decode "
            "kernel; S: a hybrid's fixed state)",
            f"{s.weights_touched(s.B)} + {B} · ({s.per_layer_gpu()} · {s.layer_tokens(ctx)}{s.kv_reads()}"
            f"{s.state_gpu()}) + {B} · {kv_tok} + {B} · {act}",
            _bytes_value(m["decode_bytes"]),
        ),
        ExplainItem(
            "Decode step time (plain)",
            f"{s.step_time_formula};  {COMM}",
            s.step_time(decode(xa), s.B, s.B, 0.0),
            _seconds_value(m["plain_tpot_s"], bool(m["decode_compute_bound"])),
        ),
    ]


def _layout_step_items(s: _Scenario) -> list[ExplainItem]:
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
            "Time to first token (TTFT)",
            f"{s.step_time_formula};  {COMM}",
            s.step_time(pre, s.P, 1.0, s.P, dict(n=s.P)),
            _seconds_value(m["ttft_s"], bool(m["prefill_compute_bound"])),
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
            s.step_time(dec, s.B, s.B, 0.0, step),
            _seconds_value(m["plain_tpot_s"], bool(m["decode_compute_bound"])),
        ),
    ]


def _roofline_items(s: _Scenario) -> list[ExplainItem]:
    return _efficiency_items(s) + _step_items(s) + [_ridge_item(s)] + _rate_items(s)


def _speculative_items(s: _Scenario) -> list[ExplainItem]:
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


def _cache_items(s: _Scenario) -> list[ExplainItem]:
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
    ttft_hit = f(cache_hit_prefill(xa).time_s)
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
        ExplainItem(
            "TTFT with prompt cache",
            "h · t_prefill(P − X new tokens after X cached) + (1 − h) · t_prefill(P)",
            f"{num(h)} · {num(ttft_hit)} + (1 - {num(h)}) · {num(m['ttft_s'])}",
            _seconds_value(m["cached_ttft_s"]),
        ),
    ]


def explain(result: Result) -> list[ExplainItem]:
    """Every headline figure of ``result`` with its formula and substituted numbers."""
    s = _Scenario(result)
    layout = [] if s.plain else layout_items(s)
    return _memory_items(s) + _roofline_items(s) + _chunked_items(s) + _speculative_items(s) + _cache_items(s) + layout
