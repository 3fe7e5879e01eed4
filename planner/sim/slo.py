"""The service-level objective: one definition, named the same in the sizing search, its tables,
the frontier, the dashboard and the CLI.

A deployment meets the SLO when, over the simulated (or modelled) traffic,
  p-th percentile TTFT ≤ ``slo_ttft_s``        over requests; a rejected request never gets its
                                                first token, so it counts as an infinite TTFT
  p-th percentile ITL  ≤ ``slo_tpot_s``        inter-token latency over tokens (``results``)
  goodput ≥ ``slo_goodput``                    the share of requests served with TTFT ≤ the TTFT
                                                target and their own TPOT ≤ the ITL target
                                                (DistServe's attainment); 0 = no requirement
and no request was rejected for KV capacity.  p = ``slo_pct`` (99 by default: the p99 the
simulator's own verdict and its early stop use; the early stop is valid for any p ≥ 99,
because more than 1 % of requests or tokens over a target misses every such percentile).

Binding constraints (what sets a configuration's replica count, ``CONSTRAINTS``):
  TTFT        the TTFT percentile reaches its target first as load grows
  ITL         the ITL percentile does
  KV memory   the sequences in flight fill the KV cache
  batch cap   they reach max_num_seqs (``batch``)
  compute     the replica's GPU time is saturated (its prefill work keeps it busy ≥ ``COMPUTE_BUSY_MAX``)
  goodput     the goodput share does
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.format import fmt_pct, fmt_seconds
from planner.model.scenario import Scenario
from planner.sim.results import NOT_RUN, REJECTED_KV, SERVED, SimResult, percentiles

TTFT, ITL, KV, BATCH, COMPUTE, GOODPUT = "TTFT", "ITL", "KV memory", "batch cap", "compute", "goodput"
#: Every binding constraint, in the order a tie is named.
CONSTRAINTS = (ITL, TTFT, KV, BATCH, COMPUTE, GOODPUT)
#: The busiest a replica's prefill queue may run in the screening model (``analytic``): above it the
#: queue's percentile wait is unstable over a finite run, so a configuration there counts as compute-bound.
COMPUTE_BUSY_MAX = 0.9
#: A run whose KV blocks were this full at some step counts as having filled its cache.
KV_FULL_FRAC = 0.98


@dataclass(frozen=True)
class Slo:
    """The targets (seconds), their percentile and the goodput share (module doc)."""

    ttft_s: float
    itl_s: float
    pct: float = 99.0
    goodput_frac: float = 0.0

    @classmethod
    def of(cls, s: Scenario) -> Slo:
        return cls(s.slo_ttft_s, s.slo_tpot_s, s.slo_pct, s.slo_goodput)

    @property
    def miss_frac(self) -> float:
        """Share of requests (TTFT) or tokens (ITL) allowed over the target: 1 − p/100."""
        return 1.0 - self.pct / 100.0

    @property
    def early_stop_valid(self) -> bool:
        """The simulator's early stop (more than 1 % over a target) cannot end a run that would meet this SLO."""
        return self.pct >= 99.0

    @property
    def pct_label(self) -> str:
        return f"p{self.pct:g}"

    @property
    def ttft_label(self) -> str:
        return f"{self.pct_label} TTFT"

    @property
    def itl_label(self) -> str:
        return f"{self.pct_label} ITL"

    def text(self) -> str:
        """The SLO in words: 'p99 TTFT ≤ 1 s and p99 ITL ≤ 50 ms' (+ the goodput share)."""
        out = f"{self.ttft_label} ≤ {fmt_seconds(self.ttft_s)} and {self.itl_label} ≤ {fmt_seconds(self.itl_s)}"
        if self.goodput_frac > 0:
            out += f", goodput ≥ {fmt_pct(self.goodput_frac)}"
        return out


@dataclass(frozen=True)
class Verdict:
    """A simulation judged against an ``Slo``: the percentiles, the goodput, what failed."""

    met: bool
    ttft_q_s: float  # the TTFT percentile, rejected requests counted as never served
    itl_q_s: float
    goodput_frac: float
    failed: tuple[str, ...]  # constraints of ``CONSTRAINTS`` the run missed (empty: met)
    kv_full: bool = False  # the KV cache filled (a preemption, or ≥ ``KV_FULL_FRAC`` of its blocks in use)

    def binding_text(self) -> str:
        """What missed, and why when the KV cache filled: 'TTFT (KV cache full)'."""
        text = " + ".join(self.failed)
        return text + (" (KV cache full)" if self.kv_full and KV not in self.failed and text else "")


def verdict(r: SimResult, slo: Slo) -> Verdict:
    """``r`` against ``slo`` (module doc).  A run stopped early missed a target at ≥ 99; the one its
    recorded requests and tokens miss is named (TTFT when neither percentile shows it yet)."""
    ran = r.status != NOT_RUN
    served = r.status == SERVED
    ttft_all = np.where(served, r.ttft_s, np.inf)[ran]
    ttft_q = percentiles(ttft_all, (slo.pct,))[0] if ttft_all.size else float("inf")
    itl_q = percentiles(r.itl_s, (slo.pct,), r.itl_weight)[0] if r.itl_s.size else 0.0
    ok_tpot = (r.output_tokens <= 1) | (r.tpot_s <= slo.itl_s)
    good = served & (r.ttft_s <= slo.ttft_s) & ok_tpot
    goodput = float(good.mean()) if good.size else float("nan")
    failed = []
    if (r.status == REJECTED_KV).any():
        failed.append(KV)
    if not served.any() or ttft_q > slo.ttft_s:
        failed.append(TTFT)
    if itl_q > slo.itl_s:
        failed.append(ITL)
    if slo.goodput_frac > 0 and not goodput >= slo.goodput_frac:
        failed.append(GOODPUT)
    if r.stopped_early and not failed:
        failed.append(TTFT)
    sm = r.summary
    kv_full = bool(sm.get("preemptions", 0.0) > 0 or sm.get("kv_used_max_frac", 0.0) >= KV_FULL_FRAC)
    return Verdict(not failed, float(ttft_q), float(itl_q), goodput, tuple(failed), kv_full)
