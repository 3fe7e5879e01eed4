"""The sizing search's screening model: the traffic one replica of a configuration carries within
the SLO, for a whole grid of configurations in one vectorised pass (the simulator confirms the best).

Step times are the simulator's own (``step_grid.StepModel``: ``roofline.step_cost`` with one prefill
chunk, per configuration).  The traffic enters as a few numbers of the user's workload
(``step_grid.TrafficStats``): mean, p-th percentile and quantile nodes of the uncached prompt Pu,
E[Pu²], mean output O, cached and shared prefix tokens.

Colocated replica (vLLM continuous batching with chunked prefill), parametrised by x, the
requests arriving per scheduler step (everything below grows with x, so each SLO term is monotone):
  decoding streams    N = x·(O − 1)/E            (E: tokens a decode step yields; 1 without speculation)
  N at the percentile N_hi = N + z·√N             (the count in flight is Poisson; z = Φ⁻¹(p))
  prefill budget      b = C − N·q                (q = γ + 1 tokens per decode; C = chunk)
  a mixed step        p = min(b, max(Pu/k, x·Pu)) prefill tokens: alone a prompt takes k = E[⌈Pu/b⌉]
                      steps (over quantile nodes of Pu), under load prompts share steps; a share
                      f = min(1, x·Pu / p) of the steps carries one
  step times          t_dec = t(N, 0), t_mix = t(N, p), t_full = t(N, b)  (+ γ draft steps)
  mean step           τ = f·t_mix + (1 − f)·t_dec,   requests/s λ = x / τ
  ITL                 tokens wait t/a (a tokens accepted at once, P(a = j) from α); at N_hi a mixed
                      step's time grows linearly from t₁ (one prefill token) to t_full, so it exceeds
                      the limit when its chunk exceeds n*; a prompt P brings ⌊P/b⌋ full chunks and
                      one of P mod b (averaged over quantile nodes of Pu), x prompts per step, while
                      the queue is empty; while it is not (share ρ) every mixed step is full.  The
                      share of tokens over the target must be ≤ 1 − p/100
  prefill queue       the prompts' tokens are served b per full step: busy share ρ = λ·Pu·t_full / b;
                      own prefill S(P) = ⌈P/b⌉·t₁ + (P/b)·(t_full − t₁), t₁ = t_dec + the prefill overhead;
                      mean wait W = λ·E[S²] / (2(1 − ρ)) (Pollaczek–Khinchine, M/G/1), its tail
                      P(wait > w) ≈ ρ·exp(−w·ρ/W), so W_p = (W/ρ)·ln(ρ / (1 − p/100)) when ρ > 1 − p/100
  TTFT percentile     W + S(Pu) + τ/2 + √((W_p − W)² + (S(Pu_p) − S(Pu))²)   (independent tails in quadrature)
  the SLO's statistic the percentiles above are p's; a mean holds W + S(Pu) + τ/2 (TTFT) and τ/E (ITL), and
                      the per-request TPOT and E2EL are ``screen_stats``' (each term only for a target set)
  compute             ρ ≤ ``slo.COMPUTE_BUSY_MAX``
  batch cap           N_hi + x·k (prefilling) ≤ max_num_seqs
  KV memory           N_hi·(P − cached + O/2 + block/2) + x·k·Pu/2 + the shared prefix once ≤ KV tokens
The largest x meeting the TTFT, ITL and compute terms is found by bisection in log x
(``BISECTIONS``) per GPU × layout × dtypes × chunk; the batch cap and KV terms, a·x + c·√x ≤ L,
are solved in closed form per batch (k at the bisection's budget, so the answer errs low).  The
replica's capacity is λ* = x*/τ(x*), x* the smallest of the three, and the binding constraint is the
term that sets it (for the bisection, the first term failing just above it).

Disaggregated pools (DistServe-style; the KV transfer and the decode pool's first step are not
counted in TTFT):
  prefill replica     prefill-only steps of C tokens: ρ = λ·Pu·t(0, C)/C, S(P) as above with
                      t₁ = t(0, 1) (a step reads every weight); TTFT, compute and its KV
                      (λ·S·P in flight) as above, λ by bisection
  decode replica      decode-only steps: τ = t(N, 0), λ = x/τ; ITL and TPOT by bisection, batch cap (N_hi) and
                      KV (N_hi·(P + O/2 + block/2)) in closed form
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from functools import cached_property

import numpy as np

from planner.engine.inputs import Array
from planner.search.screen_stats import Latencies, decode_pool_values, z_of
from planner.search.step_grid import ReplicaGrid, TrafficStats
from planner.sim.slo import (
    BATCH,
    COMPUTE,
    COMPUTE_BUSY_MAX,
    CONSTRAINTS,
    GOODPUT,
    ITL,
    KV,
    TPOT,
    TTFT,
    LatencyName,
    Slo,
)

#: Bisection steps in log x between x_max·1e-6 and x_max: the capacity to a factor 10^(6/2¹³) ≈ 1.002.
BISECTIONS = 13
LOW_LOAD_FRAC = 1e-6
#: Fixed-point steps for the operating point x at a given rate (x ← λ·τ(x); τ moves slowly with x).
OPERATING_STEPS = 5
#: Bisection steps of the reported ITL percentile (2⁻¹² of the largest step).
ITL_BISECTIONS = 12


def _z(slo: Slo) -> float:
    return z_of(slo.q)


def _tail_s(mean_wait, rho, miss):
    """W_p = (W/ρ)·ln(ρ / miss) for ρ > miss, else 0 (module doc)."""
    safe = np.maximum(rho, 1e-300)
    return np.where(rho > miss, mean_wait / safe * np.log(np.maximum(safe / miss, 1.0)), 0.0)


def _quadrature(mean, *excess):
    return mean + np.sqrt(sum(np.maximum(e, 0.0) ** 2 for e in excess))


def share_over(limit_s, step_s: Array, accept: list[tuple[float, Array]]) -> Array:
    """Share of tokens over ``limit_s`` when every step lasts ``step_s`` (a decode pool)."""
    total: Array = np.zeros(())
    for j, share in accept:
        total = total + share * (step_s / j > limit_s)
    return total


def itl_quantile(pct: float, step_s: Array, accept: list[tuple[float, Array]]) -> Array:
    """The p-th percentile ITL over tokens when every step lasts ``step_s``: the smallest step / j with
    at most 1 − p/100 of the tokens above it."""
    miss = 1.0 - pct / 100.0
    best = np.full(np.shape(step_s), np.inf)
    for j, _ in accept:
        v = step_s / j
        best = np.where(share_over(v, step_s, accept) <= miss + 1e-12, np.minimum(best, v), best)
    return best


@dataclass(frozen=True)
class Screen:
    """What the screening model says of each configuration (arrays of the grid's shape)."""

    capacity_per_s: Array  # λ*: requests/s one replica carries within the SLO (0: never)
    binding: np.ndarray  # index into ``slo.CONSTRAINTS`` of the term that sets λ*
    low_ok: np.ndarray  # the SLO is met at vanishing load
    x: Array  # x*: arrivals per step (per-step load) at λ*
    x_low: Array  # the low-load probe


def _first_failing(fails: dict[str, Array], shape: tuple[int, ...]) -> np.ndarray:
    out = np.full(shape, CONSTRAINTS.index(COMPUTE), dtype=np.int64)
    done = np.zeros(shape, dtype=bool)
    for name in CONSTRAINTS:
        if name in fails:
            f = np.broadcast_to(fails[name], shape) & ~done
            out[f] = CONSTRAINTS.index(name)
            done |= f
    return out


Probe = Callable[[Array], tuple[dict[str, Array], Array]]


def _bisect(ok_at: Probe, x_max: Array, shape: tuple[int, ...]) -> Screen:
    """The largest x in (LOW_LOAD_FRAC·x_max, x_max] where every term holds (all monotone), and what fails above it.
    The rate at the answer and the terms failing just above it are those of the probes that set lo and hi
    (x_max itself is probed only where no probe failed)."""
    x_max = np.broadcast_to(np.maximum(x_max, 1e-300), shape)
    lo = x_max * LOW_LOAD_FRAC
    x_low = lo
    fails_low, rate = ok_at(lo)
    rate = np.broadcast_to(rate, shape)
    low_ok = ~np.any([np.broadcast_to(f, shape) for f in fails_low.values()], axis=0)
    hi = x_max.copy()
    above = np.full(shape, -1, dtype=np.int64)  # the first term failing at hi (-1: hi = x_max, not probed)
    for _ in range(BISECTIONS):
        mid = np.sqrt(lo * hi)
        fails, rate_mid = ok_at(mid)
        bad = np.any([np.broadcast_to(f, shape) for f in fails.values()], axis=0)
        lo = np.where(bad, lo, mid)
        hi = np.where(bad, mid, hi)
        rate = np.where(bad, rate, rate_mid)
        above = np.where(bad, _first_failing(fails, shape), above)
    if np.any(above < 0):
        above = np.where(above < 0, _first_failing(ok_at(x_max)[0], shape), above)
    binding = np.where(low_ok, above, _first_failing(fails_low, shape))
    return Screen(np.where(low_ok, rate, 0.0), binding, low_ok, lo, x_low)


def occupancy_x(a, c, limit) -> Array:
    """The largest x with a·x + c·√x ≤ limit (a, c ≥ 0): √x = (√(c² + 4·a·limit) − c) / (2a); 0 if limit ≤ 0."""
    lim = np.maximum(limit, 0.0)
    root = (np.sqrt(c * c + 4.0 * a * lim) - c) / (2.0 * np.maximum(a, 1e-300))
    return root * root


def _combine(a: Screen, limits: dict[str, Array], shape: tuple[int, ...], rate_at: Callable[[Array], Array]) -> Screen:
    """The bisection's screen ``a`` with closed-form limits on x (batch cap, KV): the smallest x wins."""
    x = np.broadcast_to(a.x, shape)
    binding = np.broadcast_to(a.binding, shape)
    low_ok = np.broadcast_to(a.low_ok, shape)
    for name, limit in limits.items():
        limit = np.broadcast_to(limit, shape)
        code = CONSTRAINTS.index(name)
        blocked = low_ok & (limit <= np.broadcast_to(a.x_low, shape))
        binding = np.where(low_ok & (limit < x), code, binding)
        binding = np.where(blocked, code, binding)
        low_ok = low_ok & ~blocked
        x = np.minimum(x, limit)
    return Screen(np.where(low_ok, rate_at(x), 0.0), binding, low_ok, x, a.x_low)


# ------------------------------------------------------------------ colocated replicas


@dataclass(frozen=True, eq=False)
class MixedSteps:
    """The steps one replica runs at the percentile's concurrency, for the ITL terms: decode-only
    steps t_dec, and mixed steps whose time grows from t₁ (a token of prefill) to t_full (the whole
    budget b) linearly in their prefill tokens."""

    t_dec: Array
    t_one: Array
    t_full: Array
    budget: Array
    mixed_frac: Array  # f: share of steps with prefill
    per_step_arrivals: Array  # x
    busy: Array  # ρ: share of time the prefill queue is not empty (its steps are full)
    nodes: tuple[float, ...]  # the uncached prompt's quantile nodes

    def chunks_over(self, limit_s) -> Array:
        """Prefill chunks per prompt whose step exceeds ``limit_s``: ⌊P/b⌋ full ones and the rest P mod b,
        averaged over the quantile nodes of P (module doc)."""
        n_star = (limit_s - self.t_one) * self._per_second  # the chunk whose step is the limit
        whole, rest = self._chunks
        rest_over = np.add.reduce(rest > np.asarray(n_star), axis=0, dtype=np.float64)
        return (whole * (self.budget > n_star) + rest_over) / len(self.nodes)

    @cached_property
    def _per_second(self) -> Array:
        """b / (t_full − t₁): a mixed step's prefill tokens per second of its time above t₁."""
        return self.budget / np.maximum(self.t_full - self.t_one, 1e-300)

    @cached_property
    def _chunks(self) -> tuple[Array, Array]:
        """(Σ over nodes of ⌊P/b⌋, each node's P mod b on a leading axis)."""
        p = np.asarray(self.nodes).reshape((-1,) + (1,) * np.ndim(self.budget))
        b = np.asarray(self.budget)
        whole = np.floor(p / b)
        return whole.sum(axis=0), p - whole * b

    def share_over(self, limit_s, accept: list[tuple[float, Array]]) -> Array:
        """Share of tokens whose ITL (a step / the tokens it emits at once) exceeds ``limit_s``: alone a
        prompt's chunks come x per step; while the queue is full (share ρ) every mixed step is a full one."""
        total: Array = np.zeros(())
        f, x, rho = self.mixed_frac, self.per_step_arrivals, self.busy
        for j, share in accept:
            lim = j * limit_s
            mixed = (1.0 - rho) * np.minimum(f, x * self.chunks_over(lim)) + rho * f * (self.t_full > lim)
            total = total + share * (mixed + (1.0 - f) * (self.t_dec > lim))
        return total

    def quantile(self, pct: float, accept: list[tuple[float, Array]]) -> Array:
        """The p-th percentile ITL: the smallest limit with at most 1 − p/100 of the tokens over it (bisection)."""
        miss = 1.0 - pct / 100.0
        lo = np.zeros(np.shape(self.t_full))
        hi = np.maximum(self.t_full, self.t_dec) * 1.000001
        for _ in range(ITL_BISECTIONS):
            mid = (lo + hi) / 2.0
            ok = self.share_over(mid, accept) <= miss + 1e-12
            hi, lo = np.where(ok, mid, hi), np.where(ok, lo, mid)
        return hi


def _decodes(g: ReplicaGrid, t: TrafficStats, x) -> Array:
    """N = x·(O − 1)/E."""
    return x * max(t.output_mean_tokens - 1.0, 0.0) / g.tokens_per_step


def mean_step_s(g: ReplicaGrid, t: TrafficStats, x, draft: Array | None = None) -> tuple[Array, Array, Array, Array]:
    """(τ, f, t_dec, t_mix) at arrivals per step ``x`` (module doc); ``draft``: ``g.draft_s`` at its N, if known."""
    n = _decodes(g, t, x)
    pos = np.maximum(g.chunk - n * g.q, 1.0)
    work = x * t.uncached_mean_tokens
    p = np.clip(np.maximum(t.uncached_mean_tokens / t.prefill_steps(pos), work), 1.0, pos)
    f = np.minimum(1.0, work / p)
    past = t.cached_mean_tokens + np.maximum(t.uncached_mean_tokens - p, 0.0) / 2.0
    ctx = t.decode_context_tokens
    draft = g.draft_s(n, ctx) if draft is None else draft
    t_dec = g.step_s(n, ctx, draft=draft)
    t_mix = g.step_s(n, ctx, p, past, draft=draft)
    return f * t_mix + (1.0 - f) * t_dec, f, t_dec, t_mix


@dataclass(frozen=True)
class ColocatedState:
    """The colocated model at per-step arrivals x (module doc)."""

    rate_per_s: Array
    mean_step_s: Array
    prefill_busy: Array
    steps: MixedSteps
    fails: dict[str, Array]  # the latency, compute (and goodput) terms
    latencies: Latencies

    def value(self, name: LatencyName, slo: Slo, accept: list[tuple[float, Array]]) -> Array:
        """``slo``'s statistic of latency ``name`` at this load (``screen_stats``)."""
        if name == "itl" and not slo.is_mean:
            return self.steps.quantile(slo.q, accept)
        return self.latencies.value(name, slo)


def colocated_state(g: ReplicaGrid, t: TrafficStats, slo: Slo, x) -> ColocatedState:
    """The latency, compute (and goodput) terms of the colocated model at arrivals per step ``x`` (module doc)."""
    n = _decodes(g, t, x)
    n_hi = n + _z(slo) * np.sqrt(n)
    budget_hi = g.chunk - n_hi * g.q
    pos = np.maximum(g.chunk - n * g.q, 1.0)
    pos_hi = np.maximum(budget_hi, 1.0)
    ctx = t.decode_context_tokens
    draft, draft_hi = g.draft_s(n, ctx), g.draft_s(n_hi, ctx)  # each shared by that decode count's steps
    tau, f, t_dec, t_mix = mean_step_s(g, t, x, draft)
    past = t.cached_mean_tokens + np.maximum(t.uncached_mean_tokens - pos, 0.0) / 2.0
    t_full = g.step_s(n, ctx, pos, past, draft)
    rate = x / tau
    extra = g.step.prefill_overhead - g.step.decode_overhead
    t_one = t_dec + extra
    rho = rate * t.uncached_mean_tokens * t_full / pos

    def own(tokens):
        return np.ceil(tokens / pos) * t_one + tokens / pos * (t_full - t_one)

    s_mean = own(t.uncached_mean_tokens)
    es2 = s_mean**2 * t.uncached_sq_mean_tokens / t.uncached_mean_tokens**2
    stable = rho < 1.0
    wait = np.where(stable, rate * es2 / (2.0 * np.maximum(1.0 - rho, 1e-12)), 0.0)  # unstable: TTFT ∞ below
    base = wait + s_mean + tau / 2.0

    def ttft(miss: float, tail_tokens: float) -> Array:
        return np.where(stable, _quadrature(base, _tail_s(wait, rho, miss) - wait, own(tail_tokens) - s_mean), np.inf)

    t_dec_hi = g.step_s(n_hi, ctx, draft=draft_hi)
    t_full_hi = g.step_s(n_hi, ctx, pos_hi, past, draft_hi)
    busy = np.minimum(rho, 1.0)
    steps = MixedSteps(t_dec_hi, t_dec_hi + extra, t_full_hi, pos_hi, f, x, busy, t.nodes)
    lat = Latencies(
        t, g.tokens_per_step, g.accept_var, tau, f, t_dec, t_mix, t_dec_hi, t_full_hi, busy,
        np.where(stable, base, np.inf), ttft,
    )  # fmt: skip
    fails = {COMPUTE: (rho > COMPUTE_BUSY_MAX) | (budget_hi < 1.0)} | lat.fails(slo)
    if slo.itl_s is not None and not slo.is_mean:
        fails[ITL] = steps.share_over(slo.itl_s, g.acceptance()) > slo.miss_frac + 1e-12
    return ColocatedState(rate, tau, rho, steps, fails, lat)


def colocated_screen(
    g: ReplicaGrid, t: TrafficStats, slo: Slo, shape_a: tuple[int, ...], batch: Array, kv_tokens: Array
) -> Screen:
    """λ* and the binding term of every colocated configuration (module doc): the bisection over ``g``
    (shape ``shape_a``: every axis but the batch), then the batch cap and KV terms for each ``batch``
    and its ``kv_tokens`` (the full grid's shape)."""
    per_request = max(t.output_mean_tokens - 1.0, 0.0) / g.tokens_per_step
    x_max = g.chunk / (t.uncached_mean_tokens + g.q * per_request)

    def at(x):
        s = colocated_state(g, t, slo, x)
        return s.fails, s.rate_per_s

    a = _bisect(at, x_max, shape_a)
    k_pre = t.prefill_steps(np.maximum(g.chunk - per_request * a.x * g.q, 1.0))
    c = _z(slo) * np.sqrt(per_request)
    per_seq = t.prompt_mean_tokens - t.cached_mean_tokens + t.output_mean_tokens / 2.0 + g.block / 2.0
    limits = {
        BATCH: occupancy_x(per_request + k_pre, c, batch),
        KV: occupancy_x(
            per_request * per_seq + k_pre * t.uncached_mean_tokens / 2.0,
            c * per_seq,
            kv_tokens - t.shared_prefix_tokens,
        ),
    }
    shape = np.broadcast_shapes(shape_a, np.shape(batch), np.shape(kv_tokens))
    with np.errstate(divide="ignore", invalid="ignore"):  # x = 0 (no sequence fits): 0 / 0, NaN where the screen sets 0
        return _combine(a, limits, shape, lambda x: x / mean_step_s(g, t, x)[0])


ScreenFn = Callable[[ReplicaGrid, TrafficStats, Slo, tuple[int, ...], Array, Array], Screen]


def screen_where(
    screen: ScreenFn,
    g: ReplicaGrid,
    t: TrafficStats,
    slo: Slo,
    shape_a: tuple[int, ...],
    batch: Array,
    kv_tokens: Array,
    runs: np.ndarray,
    axis: int = 1,
) -> Screen:
    """``screen`` (``colocated_screen`` or ``decode_screen``, same arguments) over only the configurations
    of ``g`` (shape ``shape_a``: the batch's axis ``axis`` of length 1, the configurations' first) with some batch that
    ``runs`` (the engine accepts it and it fits: full grid shape); the others carry no traffic
    (capacity 0, not met at low load).  A point that does not run is bound by KV memory (there is no room
    for one sequence), whatever its configuration's other batches say.  Every formula is
    elementwise, so the screened ones get the very numbers a whole-grid pass gives them."""
    shape = np.broadcast_shapes(shape_a, np.shape(batch), np.shape(kv_tokens))
    runs = np.broadcast_to(runs, shape)
    kv = CONSTRAINTS.index(KV)
    need = np.any(runs, axis=axis, keepdims=True)
    if need.all():
        whole = screen(g, t, slo, shape_a, batch, kv_tokens)
        return replace(whole, binding=np.where(runs, whole.binding, kv))
    where = np.nonzero(need)
    sub = g.take(shape_a, tuple(w[:, None] for w in where))  # (configurations, 1)
    index = tuple(slice(None) if i == axis else w for i, w in enumerate(where))  # → (configurations, batches)
    part = screen(
        sub, t, slo, (where[0].size, 1), np.broadcast_to(batch, shape)[index], np.broadcast_to(kv_tokens, shape)[index]
    )
    out = Screen(np.zeros(shape), np.full(shape, kv), np.zeros(shape, bool), np.zeros(shape), np.zeros(shape))
    for f in fields(Screen):
        getattr(out, f.name)[index] = np.broadcast_to(getattr(part, f.name), (where[0].size, shape[axis]))
    return replace(out, binding=np.where(runs, out.binding, kv))


def operating_x(step_at: Callable[[Array], Array], rate_per_s: Array, x_start: Array) -> Array:
    """The per-step arrivals x at which a replica receives ``rate_per_s`` (x ← λ·τ(x), module doc)."""
    x = x_start
    for _ in range(OPERATING_STEPS):
        x = rate_per_s * step_at(x)
    return x


# ------------------------------------------------------------------ disaggregated pools


@dataclass(frozen=True)
class PrefillModel:
    """A prefill-only replica (module doc): its full-chunk step, own prefill times and capacity."""

    g: ReplicaGrid
    t: TrafficStats
    t_full: Array
    t_one: Array
    capacity_per_s: Array  # ρ = 1

    @classmethod
    def of(cls, g: ReplicaGrid, t: TrafficStats) -> PrefillModel:
        past = t.cached_mean_tokens + np.maximum(t.uncached_mean_tokens - g.chunk, 0.0) / 2.0
        t_full = g.step.time_s(0.0, 1.0, 0.0, g.chunk, past)
        t_one = g.step.time_s(0.0, 1.0, 0.0, 1.0, t.cached_mean_tokens)
        return cls(g, t, t_full, t_one, g.chunk / (t.uncached_mean_tokens * t_full))

    def own_s(self, tokens: float) -> Array:
        c = self.g.chunk
        return np.ceil(tokens / c) * self.t_one + tokens / c * (self.t_full - self.t_one)

    def ttft_s(self, rate, miss: float | None, tail_tokens: float = 0.0) -> Array:
        """The TTFT percentile at ``rate`` requests/s, its own-prefill tail at ``tail_tokens``; its mean
        W + S(Pu) when ``miss`` is None."""
        s_mean = self.own_s(self.t.uncached_mean_tokens)
        es2 = s_mean**2 * self.t.uncached_sq_mean_tokens / self.t.uncached_mean_tokens**2
        rho = rate / self.capacity_per_s
        wait = rate * es2 / (2.0 * np.maximum(1.0 - rho, 1e-12))
        if miss is None:
            value = wait + s_mean
        else:
            value = _quadrature(wait + s_mean, _tail_s(wait, rho, miss) - wait, self.own_s(tail_tokens) - s_mean)
        return np.where(rho < 1.0, value, np.inf)

    def ttft_stat(self, rate, slo: Slo) -> Array:
        """``slo``'s statistic of the TTFT at ``rate``."""
        return self.ttft_s(rate, None if slo.is_mean else slo.miss_frac, self.t.uncached_q_tokens)


def prefill_screen(m: PrefillModel, slo: Slo, shape: tuple[int, ...]) -> Screen:
    """λ* of prefill-only replicas (module doc)."""
    t, g = m.t, m.g
    s_mean = m.own_s(t.uncached_mean_tokens)

    def at(rate):
        fails = {
            KV: rate * s_mean * (t.prompt_mean_tokens + g.block) > g.kv_tokens,
            COMPUTE: rate / m.capacity_per_s > COMPUTE_BUSY_MAX,
        }
        if slo.ttft_s is not None:
            fails[TTFT] = ~(m.ttft_stat(rate, slo) <= slo.ttft_s)
            if slo.goodput_frac > 0:
                fails[GOODPUT] = ~(m.ttft_s(rate, 1.0 - slo.goodput_frac, t.uncached_goodput_tokens) <= slo.ttft_s)
        return fails, rate

    return _bisect(at, m.capacity_per_s, shape)


def decode_screen(
    g: ReplicaGrid, t: TrafficStats, slo: Slo, shape_a: tuple[int, ...], batch: Array, kv_tokens: Array
) -> Screen:
    """λ* of decode-only replicas (module doc): ITL by bisection over ``g``, then per ``batch``."""
    z = _z(slo)
    per_request = max(t.output_mean_tokens - 1.0, 1e-9) / g.tokens_per_step
    ctx = t.decode_context_tokens
    accept = g.acceptance()

    def at(x):
        n = x * per_request
        tau = g.step_s(n, ctx)
        return decode_fails(g, t, slo, tau, g.step_s(n + z * np.sqrt(n), ctx), accept), x / tau

    top = float(np.max(batch)) / per_request
    a = _bisect(at, np.broadcast_to(top, np.broadcast_shapes(shape_a, np.shape(top))), shape_a)
    c = z * np.sqrt(per_request)
    per_seq = t.prompt_mean_tokens + t.output_mean_tokens / 2.0 + g.block / 2.0
    limits = {
        BATCH: occupancy_x(per_request, c, batch),
        KV: occupancy_x(per_request * per_seq, c * per_seq, kv_tokens),
    }
    shape = np.broadcast_shapes(shape_a, np.shape(batch), np.shape(kv_tokens))
    return _combine(a, limits, shape, lambda x: x / g.step_s(x * per_request, ctx))


def decode_fails(g: ReplicaGrid, t: TrafficStats, slo: Slo, tau: Array, tau_hi: Array, accept) -> dict[str, np.ndarray]:
    """A decode replica's ITL and TPOT terms (mean step ``tau``, the step at the percentile's concurrency
    ``tau_hi``), and the goodput's: the mean TPOT within the goodput's TPOT target."""
    fails: dict[str, np.ndarray] = {}
    values = decode_pool_values(slo, g.tokens_per_step, g.accept_var, tau, tau_hi, t.gaps_inv_mean)
    if slo.itl_s is not None:
        if slo.is_mean:
            fails[ITL] = values["itl"] > slo.itl_s
        else:
            fails[ITL] = share_over(slo.itl_s, tau_hi, accept) > slo.miss_frac + 1e-12
    if slo.tpot_s is not None:
        fails[TPOT] = values["tpot"] > slo.tpot_s
    if slo.goodput_frac > 0 and slo.goodput_tpot_s is not None:
        fails[GOODPUT] = tau / g.tokens_per_step > slo.goodput_tpot_s
    return fails


def decode_stats(g: ReplicaGrid, t: TrafficStats, slo: Slo, rate_per_s: Array) -> tuple[dict[str, Array], Array]:
    """(``slo``'s statistic of the ITL and the TPOT, mean step) of a decode replica receiving ``rate_per_s``."""
    z = _z(slo)
    per_request = max(t.output_mean_tokens - 1.0, 1e-9) / g.tokens_per_step
    ctx = t.decode_context_tokens
    x = operating_x(lambda x: g.step_s(x * per_request, ctx), rate_per_s, rate_per_s * g.step_s(1.0, ctx))
    n = x * per_request
    tau, step = g.step_s(n, ctx), g.step_s(n + z * np.sqrt(n), ctx)
    values = decode_pool_values(slo, g.tokens_per_step, g.accept_var, tau, step, t.gaps_inv_mean)
    if not slo.is_mean:
        values["itl"] = itl_quantile(slo.q, step, g.acceptance())
    return values, tau


def ceil_replicas(rate_per_s: float, capacity_per_s: Array) -> Array:
    """⌈rate / λ*⌉ (inf where λ* = 0), a hair below whole numbers counted whole."""
    with np.errstate(divide="ignore"):
        r = np.where(capacity_per_s > 0, rate_per_s / np.where(capacity_per_s > 0, capacity_per_s, 1.0), np.inf)
    return np.where(np.isfinite(r), np.maximum(np.ceil(r * (1.0 - 1e-9)), 1.0), np.inf)
