"""The screening model's SLO statistics (``planner.sim.slo``'s definitions): the mean or a percentile of
TTFT, per-request TPOT, ITL and E2EL of one colocated replica at a load, from the quantities the model
(``analytic``) already has — the mean step τ, the share f of steps with prefill, the decode-only and mixed
steps at the mean concurrency N and at its percentile N_hi, the prefill queue's busy share ρ — and the
traffic (``step_grid.TrafficStats``).  E = tokens a step emits, Var(a) its variance (speculation).

  ITL   mean        τ / E  (every step's duration over the tokens it emits)
        percentile  ``analytic.MixedSteps``: the share of tokens over the target (the module doc there)
  TPOT  mean        τ / E  (a request's TPOT is the mean of its gaps)
        percentile  τ/E + √(((τ_hi − τ)/E)² + z²·σ²),  z = Φ⁻¹(p):
                    τ_hi = f·(ρ·t_full_hi + (1 − ρ)·t_mix_hi) + (1 − f)·t_dec_hi, t_mix_hi = t_mix + t_dec_hi − t_dec
                           (a request living at the percentile's concurrency; while the prefill queue is busy
                           every mixed step is a full one)
                    σ² = E[1/(O − 1)] · (f·(1 − f)·(t_mix − t_dec)² + τ²·Var(a)/E) / E²
                           (a request of n gaps meets Binomial(n, f) mixed steps; its tokens per step vary)
  TTFT  mean        W + S(Pu) + τ/2        percentile  ``analytic``'s quadrature of the queue and prompt tails
  E2EL  mean        TTFT_mean + (O − 1)·TPOT_mean
        percentile  E2EL_mean + √((TTFT_p − TTFT_mean)² + ((O_p − O)·TPOT_mean)² + ((O − 1)·(TPOT_p − TPOT_mean))²)
                    (the output length's tail, O_p at the percentile, and the two latencies' tails in quadrature)
All are elementwise over the grid; the simulator confirms the configurations the screen picks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from planner.engine.inputs import Array
from planner.search.step_grid import TrafficStats
from planner.sim.slo import CONSTRAINT_OF, GOODPUT, LatencyName, Slo


def z_of(pct: float) -> float:
    """Φ⁻¹(p / 100): the standard normal's p-th percentile (0 at the median, for the mean)."""
    return NormalDist().inv_cdf(pct / 100.0)


@dataclass(frozen=True, eq=False)
class Latencies:
    """One colocated replica's latency pieces at one load (arrays of the grid's shape; module doc)."""

    t: TrafficStats
    e: Array  # E
    accept_var: Array
    tau: Array
    f: Array
    t_dec: Array
    t_mix: Array
    t_dec_hi: Array
    t_full_hi: Array
    rho: Array
    ttft_mean: Array  # ∞ where the prefill queue is unstable
    ttft_at: Callable[[float, float], Array]  # (share over, prompt tail tokens) → that TTFT percentile

    @property
    def tpot_mean(self) -> Array:
        return self.tau / self.e

    def tpot_at(self, pct: float) -> Array:
        """The per-request TPOT at percentile ``pct`` (module doc)."""
        z = z_of(pct)
        t_mix_hi = self.t_mix + self.t_dec_hi - self.t_dec
        tau_hi = self.f * (self.rho * self.t_full_hi + (1.0 - self.rho) * t_mix_hi) + (1.0 - self.f) * self.t_dec_hi
        spread = self.f * (1.0 - self.f) * (self.t_mix - self.t_dec) ** 2 + self.tau**2 * self.accept_var / self.e
        var = self.t.gaps_inv_mean * spread / self.e**2
        return self.tpot_mean + np.sqrt((np.maximum(tau_hi - self.tau, 0.0) / self.e) ** 2 + z * z * var)

    def e2e_at(self, pct: float, ttft_q: Array, output_q: float) -> Array:
        """The E2EL at percentile ``pct`` from the TTFT there and the output length there (module doc)."""
        o = self.t.output_mean_tokens
        mean = self.ttft_mean + max(o - 1.0, 0.0) * self.tpot_mean
        tails = (
            (ttft_q - self.ttft_mean) ** 2
            + ((output_q - o) * self.tpot_mean) ** 2
            + (max(o - 1.0, 0.0) * (self.tpot_at(pct) - self.tpot_mean)) ** 2
        )
        return mean + np.sqrt(tails)

    def value(self, name: LatencyName, slo: Slo) -> Array:
        """``slo``'s statistic of latency ``name`` (the ITL's percentile is ``MixedSteps.quantile``'s: not here)."""
        t = self.t
        if name == "ttft":
            return self.ttft_mean if slo.is_mean else self.ttft_at(slo.miss_frac, t.uncached_q_tokens)
        if name == "tpot" or (name == "itl" and slo.is_mean):
            return self.tpot_mean if slo.is_mean else self.tpot_at(slo.q)
        if name == "e2e":
            if slo.is_mean:
                return self.ttft_mean + max(t.output_mean_tokens - 1.0, 0.0) * self.tpot_mean
            return self.e2e_at(slo.q, self.value("ttft", slo), t.output_q_tokens)
        raise ValueError(f"{name}: the ITL percentile is MixedSteps.quantile's")

    def fails(self, slo: Slo) -> dict[str, np.ndarray]:
        """The TTFT, TPOT, E2EL (and ITL of a mean) terms over their targets, and the goodput's: the TTFT
        and E2EL at the goodput share's percentile within theirs and the mean TPOT within the goodput's."""
        out: dict[str, np.ndarray] = {}
        for name, target in slo.targets.items():
            if name != "itl" or slo.is_mean:
                out[CONSTRAINT_OF[name]] = ~(self.value(name, slo) <= target)
        if slo.goodput_frac > 0:
            g = slo.goodput_frac * 100.0
            bad = np.zeros(np.shape(self.tau), dtype=bool)
            ttft_g = self.ttft_at(1.0 - slo.goodput_frac, self.t.uncached_goodput_tokens)
            if slo.ttft_s is not None:
                bad = bad | ~(ttft_g <= slo.ttft_s)
            if slo.goodput_tpot_s is not None:
                bad = bad | (self.tpot_mean > slo.goodput_tpot_s)
            if slo.e2e_s is not None:
                bad = bad | ~(self.e2e_at(g, ttft_g, self.t.output_goodput_tokens) <= slo.e2e_s)
            out[GOODPUT] = bad
        return out


def decode_pool_values(
    slo: Slo, e: Array, accept_var: Array, tau: Array, tau_hi: Array, gaps_inv_mean: float
) -> dict[str, Array]:
    """A decode pool's TPOT and (mean) ITL statistic: every step a decode step, τ at the mean concurrency and
    τ_hi at the percentile's; TPOT_p = τ/E + √(((τ_hi − τ)/E)² + z²·E[1/(O − 1)]·τ²·Var(a)/E³)."""
    mean = tau / e
    if slo.is_mean:
        return {"tpot": mean, "itl": mean}
    z = z_of(slo.q)
    var = gaps_inv_mean * tau**2 * accept_var / e**3
    return {"tpot": mean + np.sqrt((np.maximum(tau_hi - tau, 0.0) / e) ** 2 + z * z * var)}
