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

import math
from dataclasses import dataclass

import numpy as np

from planner.engine.chunked import chunk_steps
from planner.engine.evaluate import Result
from planner.engine.prompt_cache import cache_hit_prefill, cacheable_prefix_tokens
from planner.engine.roofline import StepCost, decode, prefill, weight_bytes_read_per_gpu
from planner.engine.speculative import draft_step_s, verify_step_s
from planner.units import (
    ACTIVATION_BYTES,
    MS_PER_S,
    S_PER_HOUR,
    S_PER_MINUTE,
    TOKENS_PER_MTOK,
    GiB,
    KiB,
    MiB,
)


@dataclass(frozen=True)
class ExplainItem:
    title: str
    formula: str
    substituted: str
    value: str


def num(v: float, sig: int = 6) -> str:
    """A number a reader can retype: exact integers with thousands commas (or a short
    e-notation when that is exact), otherwise ``sig`` significant digits (more where a
    difference of near-equal numbers follows, so the rounding does not cancel out)."""
    v = float(v)
    if v.is_integer() and abs(v) < 1e7:
        return f"{int(v):,}"
    short = f"{v:.{sig}g}".replace("e+", "e").replace("e0", "e").replace("e-0", "e-")
    if v.is_integer() and float(short) != v:
        return f"{int(v):,}"
    return short


def exact(v: float) -> str:
    """Shortest text that reads back as exactly ``v`` (for inputs to a floor)."""
    v = float(v)
    return num(v) if v.is_integer() else repr(v)


def _human(v: float) -> str:
    """Display rounding for the parenthesised human-unit figure."""
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"


def _scalar(v) -> float:
    """One scenario's engine input (a 0-d array or a number) as a float."""
    return float(np.asarray(v))


def _value(v: float, unit: str, human: str = "") -> str:
    return f"{num(v)} {unit}" + (f" ({human})" if human else "")


def _bytes_value(v: float) -> str:
    human = f"{_human(v / GiB)} GiB" if v >= GiB else f"{_human(v / MiB)} MiB" if v >= MiB else f"{_human(v / KiB)} KiB"
    return _value(v, "B", human)


def _seconds_value(v: float, bound: bool | None = None) -> str:
    extra = "" if bound is None else (", compute-bound" if bound else ", memory-bound")
    return _value(v, "s", f"{_human(v * MS_PER_S)} ms{extra}")


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
        #: a measured (calibrated) profile's refinements of the roofline are in use
        self.refined = (self.o, self.a_c, self.a_m) != (1.0, 1.0, 1.0)

    @property
    def step_time_formula(self) -> str:
        return STEP_TIME_REFINED if self.refined else STEP_TIME

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
            f"{num(float(x.hidden))} · 2 / {num(float(x.link_bytes_per_s))} + {num(float(x.collective_latency_s))})"
        )

    def step_time(self, cost: StepCost, tokens: float) -> str:
        peak, bw = f"({num(self.peak)} · {num(self.mfu)})", f"({num(self.bw)} · {num(self.mbu)})"
        att_peak, att_bw = peak, bw
        if self.refined:
            att_peak = f"({num(self.a_c)} · {num(self.peak)} · {num(self.mfu)})"
            att_bw = f"({num(self.a_m)} · {num(self.bw)} · {num(self.mbu)})"

        def part(flop, bytes_, p: str, b: str) -> str:
            c, m = f"{num(float(flop))} / {p}", f"{num(float(bytes_))} / {b}"
            if not self.refined:
                return f"max({c}, {m})"
            return f"(max({c}, {m}) + (1 - {num(self.o)}) · min({c}, {m}))"

        return (
            f"{part(cost.matmul_flop, cost.matmul_bytes, peak, bw)} + "
            f"{part(cost.attention_flop, cost.attention_bytes, att_peak, att_bw)} + {self.comm(tokens)}"
        )


STEP_TIME = (
    "max(F_mm / (peak · MFU), B_mm / (bandwidth · MBU)) + max(F_att / (peak · MFU), B_att / (bandwidth · MBU)) + t_comm"
    "  (weight matmuls, then attention: F_mm = 2 · (N_matmul − N_head) · T + 2 · N_head · T_logits, B_mm = weights + "
    "activations; F_att = attention FLOP, B_att = KV read + written; all per GPU)"
)
STEP_TIME_REFINED = (
    "R(F_mm / (peak · MFU), B_mm / (bandwidth · MBU)) + R(F_att / (a_c · peak · MFU), B_att / (a_m · bandwidth · MBU)) "
    "+ t_comm,  R(c, m) = max(c, m) + (1 − o) · min(c, m)  (o, a_c, a_m: the calibrated profile's measured overlap "
    "and attention shares; docs/model.md §4–5)"
)
COMM = "t_comm = 2 · L · (2 · (tp − 1)/tp · T · d · 2 B / link + latency) when tp > 1"


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
            s.step_time(prefill(xa), s.P),
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
            "weights read + B · KV(ctx) per GPU + B · KV per token per GPU (written) + B · L · a / tp · 2 B",
            f"{s.weights_touched(s.B)} + {B} · ({s.per_layer_gpu()} · {s.layer_tokens(ctx)}{s.state_gpu()}) "
            f"+ {B} · {kv_tok} + {B} · {act}",
            _bytes_value(m["decode_bytes"]),
        ),
        ExplainItem(
            "Decode step time (plain)",
            f"{s.step_time_formula};  {COMM}",
            s.step_time(decode(xa), s.B),
            _seconds_value(m["plain_tpot_s"], bool(m["decode_compute_bound"])),
        ),
    ]


def _ridge_item(s: _Scenario) -> ExplainItem:
    """The decode matmul part's t_compute(B) = t_memory(B); attention is a separate roofline."""
    w = float(weight_bytes_read_per_gpu(s.x.as_arrays()))
    ridge = s.m["ridge_batch"]
    nb, nh, tp = s.body_params(), s.head_params(), num(s.tp)
    return ExplainItem(
        "Compute-bound turn (ridge batch)",
        "B* = (W / bw′) / (2 · N_matmul / tp / peak′ − L · a / tp · 2 B / bw′); "
        "the batch where the weight matmuls turn compute-bound (attention, a separate memory-bound roofline, "
        "does not move it); W = weights per GPU, "
        "peak′ = peak · MFU, bw′ = bandwidth · MBU; never when the denominator ≤ 0",
        f"({num(w)} / ({num(s.bw)} · {num(s.mbu)})) / (2 · ({nb} + {nh}) / {tp} / ({num(s.peak)} · {num(s.mfu)}) - "
        f"{s.activation_bytes()} / ({num(s.bw)} · {num(s.mbu)}))",
        _value(ridge, "sequences")
        if math.isfinite(ridge)
        else "never (activation traffic outweighs the matmul FLOP at every batch)",
    )


def _rate_items(s: _Scenario) -> list[ExplainItem]:
    """TPOT, decode tokens/s per GPU and the cost per million output tokens."""
    m, x = s.m, s.x
    B, tp = num(s.B), num(s.tp)
    if s.r.resolved.scenario.spec:
        tpot_formula, tpot_sub = (
            "speculative step time / E(α, γ)",
            f"{num(m['spec_step_s'])} / {num(m['spec_expected_tokens_per_step'])}",
        )
    else:
        tpot_formula, tpot_sub = "decode step time (speculative decoding off)", num(m["plain_tpot_s"])
    return [
        ExplainItem("Time per output token (TPOT)", tpot_formula, tpot_sub, _seconds_value(m["tpot_s"])),
        ExplainItem(
            "Decode tokens/s per GPU",
            "B / TPOT / tp",
            f"{B} / {num(m['tpot_s'])} / {tp}",
            _value(m["decode_tokens_per_s_per_gpu"], "tokens/s"),
        ),
        ExplainItem(
            "Cost per million output tokens",
            "price per GPU-hour · tp / 3600 / (B / TPOT) · 10^6",
            f"{num(float(x.price_per_gpu_hour_usd))} · {tp} / {num(S_PER_HOUR)} / {num(m['decode_tokens_per_s'])} "
            f"· {num(TOKENS_PER_MTOK)}",
            _value(m["cost_per_million_output_tokens_usd"], "USD"),
        ),
    ]


def _roofline_items(s: _Scenario) -> list[ExplainItem]:
    return _step_items(s) + [_ridge_item(s)] + _rate_items(s)


def _chunked_items(s: _Scenario) -> list[ExplainItem]:
    m = s.m
    xa = s.x.as_arrays()
    P, C = s.P, s.C
    chunks = chunk_steps(xa)
    t_last = num(float(chunks.last.time_s)) if float(chunks.rest_tokens) > 0 else "0"
    return [
        ExplainItem(
            "Chunked prefill: newcomer TTFT",
            "⌊P/C⌋ · t_step(B decodes + C prefill tokens, mean past) "
            "+ t_step(B decodes + remainder r = P − ⌊P/C⌋·C)  (0 when r = 0)",
            f"⌊{num(P)} / {num(C)}⌋ · {num(float(chunks.full.time_s))} + {t_last}",
            _seconds_value(m["chunked_ttft_s"]),
        ),
        ExplainItem(
            "Chunked prefill: running streams' max inter-token latency",
            "the largest mixed step: B decodes + min(C, P) prefill tokens after max(P − C, 0) cached; "
            + s.step_time_formula,
            s.step_time(chunks.biggest, s.B + min(C, P)),
            _seconds_value(m["chunked_max_itl_s"]),
        ),
        ExplainItem(
            "No chunking: running streams' max inter-token latency",
            "t_prefill(P) + t_decode(B)",
            f"{num(m['ttft_s'])} + {num(m['plain_tpot_s'])}",
            _seconds_value(m["nochunk_max_itl_s"]),
        ),
    ]


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
    if rpm > 0:
        hit = ExplainItem(
            "Cache hit rate (from traffic and TTL)",
            "1 − exp(−λ · max(TTL − D, 0)), λ = requests/min / 60, D = request duration",
            f"1 - exp(-{num(rpm)} / {num(S_PER_MINUTE)} · "
            f"max({num(f(xa.ttl_s))} - {num(m['request_latency_s'], 10)}, 0))",
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
    return _memory_items(s) + _roofline_items(s) + _chunked_items(s) + _speculative_items(s) + _cache_items(s)
