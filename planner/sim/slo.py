"""The service-level objective: one definition of each latency, its statistic and the verdict, named the
same in the simulator, the sizing search, its tables, the frontier, the dashboard and the CLI.

The latencies, as ``vllm bench serve`` reports them (``benchmarks/serve.py`` ``calculate_metrics``):
  TTFT   per request: first token − arrival; a rejected request never gets its first token, so for an
         SLO it counts as an infinite TTFT (``rejected_as_inf``)
  TPOT   per request: (E2EL − TTFT) / (output − 1), over the requests with more than one output token
  ITL    per gap: every inter-token latency of every request, over tokens (a speculative step that emits
         a tokens at once gives a gaps of step / a; the simulator stores them as one value of weight a)
  E2EL   per request: last token − arrival (infinite when rejected, as TTFT)
Targets ``slo_ttft_s``, ``slo_tpot_s``, ``slo_itl_s``, ``slo_e2e_s`` (seconds; any may be unset) are held to
one statistic, ``slo_pct``: ``mean``, or the p-th percentile, p in [50, 99.9] — the inverse empirical CDF
(numpy ``inverted_cdf``): the smallest value with at least p % of the samples (weights) at or below it.
A run meets the SLO when every set target's statistic is at most it, at least one request was served,
none was rejected for KV capacity, and (``slo_goodput`` > 0) the goodput share is reached:
  goodput = the share of requests served with TTFT ≤ the TTFT target, their own TPOT ≤ the TPOT target
            (the ITL target where no TPOT target is set: a request's TPOT is the mean of its gaps, the
            per-request check links made before the TPOT target existed) and E2EL ≤ the E2EL target
            (``vllm bench serve --goodput ttft:… tpot:… e2el:…``; DistServe's attainment, Zhong et al. 2024)
Old links: ``slo_tpot_s`` used to be held as the percentile of every inter-token gap; a link that gives
it without ``slo_itl_s`` is read with it as the ITL target (``planner.links``), so it means what it did.

The simulator's early stop (``SimConfig``): more than 1 % of requests over the TTFT target, or of tokens
over the ITL target, misses every percentile ≥ 99, so a run may stop there (``early_stop_valid``).

Binding constraints (what sets a configuration's replica count, ``CONSTRAINTS``):
  TTFT, TPOT, ITL, E2EL   that latency's statistic reaches its target first as load grows
  KV memory   the sequences in flight fill the KV cache
  batch cap   they reach max_num_seqs (``batch``)
  compute     the replica's GPU time is saturated (its prefill work keeps it busy ≥ ``COMPUTE_BUSY_MAX``)
  goodput     the goodput share does
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from planner.format import fmt_pct, fmt_seconds
from planner.model.scenario import Scenario, SloStat
from planner.sim.status import NOT_RUN, REJECTED_KV, SERVED
from planner.sim.weighted_quantile import weighted_percentiles

TTFT, TPOT, ITL, E2E = "TTFT", "TPOT", "ITL", "E2EL"
KV, BATCH, COMPUTE, GOODPUT = "KV memory", "batch cap", "compute", "goodput"
#: Every binding constraint, in the order a tie is named.
CONSTRAINTS = (ITL, TPOT, TTFT, E2E, KV, BATCH, COMPUTE, GOODPUT)
LatencyName = Literal["ttft", "tpot", "itl", "e2e"]
#: The latencies by the names ``statistic`` takes, in the order the SLO text lists them.
LATENCIES: tuple[LatencyName, ...] = ("ttft", "tpot", "itl", "e2e")
#: Each latency's constraint name and its name in words.
CONSTRAINT_OF: dict[str, str] = {"ttft": TTFT, "tpot": TPOT, "itl": ITL, "e2e": E2E}
WORDS = {"ttft": "TTFT", "tpot": "per-request TPOT", "itl": "ITL", "e2e": "E2E latency"}
#: The busiest a replica's prefill queue may run in the screening model (``analytic``): above it the
#: queue's percentile wait is unstable over a finite run, so a configuration there counts as compute-bound.
COMPUTE_BUSY_MAX = 0.9
#: A run whose KV blocks were this full at some step counts as having filled its cache.
KV_FULL_FRAC = 0.98
MEAN = "mean"


def percentiles(
    values: np.ndarray, pcts: Sequence[float] = (50, 90, 99), weights: np.ndarray | None = None
) -> list[float]:
    """Inverse-CDF percentiles: the smallest values with at least pct % of the weight at or below them."""
    if values.size == 0:
        return [float("nan")] * len(pcts)
    q = np.asarray(pcts) / 100.0
    if weights is not None:  # (an ITL sample: its value per decode step, the same bits without a full sort)
        return weighted_percentiles(values, q, weights)
    return np.quantile(values, q, method="inverted_cdf", weights=weights).tolist()


def stat_of(values: np.ndarray, stat: SloStat, weights: np.ndarray | None = None) -> float:
    """``stat`` (``mean`` or a percentile) of a sample; NaN when it is empty, ∞ when a mean meets an ∞."""
    if values.size == 0:
        return float("nan")
    if stat == MEAN:
        with np.errstate(invalid="ignore"):
            return float(np.average(values, weights=weights))
    return percentiles(values, (float(stat),), weights)[0]


class Run(Protocol):
    """What ``statistic`` reads of a simulation (``results.SimResult`` has it)."""

    @property
    def status(self) -> np.ndarray: ...
    @property
    def ttft_s(self) -> np.ndarray: ...
    @property
    def e2e_s(self) -> np.ndarray: ...
    @property
    def output_tokens(self) -> np.ndarray: ...
    @property
    def tpot_s(self) -> np.ndarray: ...
    @property
    def itl_s(self) -> np.ndarray: ...
    @property
    def itl_weight(self) -> np.ndarray: ...


def sample(r: Run, name: LatencyName, rejected_as_inf: bool = True) -> tuple[np.ndarray, np.ndarray | None]:
    """(values, token weights or None) of latency ``name`` of a run (module doc).  Requests the run did
    not reach (stopped early) are left out; rejected ones count as ∞ TTFT and E2EL (``rejected_as_inf``)
    or are left out as ``vllm bench serve`` leaves out failed requests."""
    if name == "itl":
        return r.itl_s, r.itl_weight
    served = r.status == SERVED
    if name == "tpot":
        return r.tpot_s[served & (r.output_tokens > 1)], None
    values = r.ttft_s if name == "ttft" else r.e2e_s
    if not rejected_as_inf:
        return values[served], None
    return np.where(served, values, np.inf)[r.status != NOT_RUN], None


def statistic(r: Run, name: LatencyName, stat: SloStat = 99.0, rejected_as_inf: bool = True) -> float:
    """The ``stat`` (``"mean"`` or a percentile 50–99.9) of TTFT, TPOT, ITL or E2EL (``name``: ttft, tpot,
    itl, e2e) of a simulation, by the definitions of the module doc; NaN when the sample is empty."""
    values, weights = sample(r, name, rejected_as_inf)
    return stat_of(values, stat, weights)


def statistics(r: Run, name: LatencyName, stats: Sequence[SloStat], rejected_as_inf: bool = True) -> list[float]:
    """``statistic`` at each of ``stats``, the percentiles from one ``np.quantile`` call on the sample: it sorts
    once (an ITL sample holds a value per decode step), and ``inverted_cdf`` picks each percentile's sample value
    from its own q alone, so each equals its own call's to the bit (tests/sim/test_slo.py)."""
    values, weights = sample(r, name, rejected_as_inf)
    if values.size == 0:
        return [float("nan")] * len(stats)
    pcts = [float(s) for s in stats if s != MEAN]
    found = iter(percentiles(values, pcts, weights) if pcts else [])
    return [stat_of(values, MEAN, weights) if s == MEAN else next(found) for s in stats]


@dataclass(frozen=True)
class Slo:
    """The targets (seconds, None = unset), their statistic and the goodput share (module doc)."""

    ttft_s: float | None = 2.0
    itl_s: float | None = 0.05
    pct: SloStat = 99.0  # "mean" or a percentile
    goodput_frac: float = 0.0
    tpot_s: float | None = None
    e2e_s: float | None = None

    @classmethod
    def of(cls, s: Scenario) -> Slo:
        return cls(s.slo_ttft_s, s.slo_itl_s, s.slo_pct, s.slo_goodput, s.slo_tpot_s, s.slo_e2e_s)

    def target(self, name: LatencyName) -> float | None:
        return {"ttft": self.ttft_s, "tpot": self.tpot_s, "itl": self.itl_s, "e2e": self.e2e_s}[name]

    @property
    def targets(self) -> dict[LatencyName, float]:
        """The set targets by latency name, in the module doc's order."""
        return {n: t for n in LATENCIES if (t := self.target(n)) is not None}

    @property
    def is_mean(self) -> bool:
        return self.pct == MEAN

    @property
    def q(self) -> float:
        """The percentile as a number (50 for the mean: the screening model's middle of the sample)."""
        return 50.0 if self.pct == MEAN else float(self.pct)

    @property
    def miss_frac(self) -> float:
        """Share of requests (TTFT) or tokens (ITL) a percentile allows over its target: 1 − p/100."""
        return 1.0 - self.q / 100.0

    @property
    def early_stop_valid(self) -> bool:
        """The simulator's early stop (more than 1 % over the TTFT or ITL target) cannot end a run that would
        meet this SLO: a percentile ≥ 99 (module doc)."""
        return not self.is_mean and self.q >= 99.0

    @property
    def stop_ttft_s(self) -> float:
        """The TTFT target the early stop counts misses against (∞: it does not count TTFT)."""
        return self.ttft_s if self.early_stop_valid and self.ttft_s is not None else float("inf")

    @property
    def stop_itl_s(self) -> float:
        return self.itl_s if self.early_stop_valid and self.itl_s is not None else float("inf")

    @property
    def goodput_tpot_s(self) -> float | None:
        """The per-request TPOT target of the goodput: the TPOT target, else the ITL target (module doc)."""
        return self.tpot_s if self.tpot_s is not None else self.itl_s

    @property
    def step_limit_s(self) -> float | None:
        """The tightest per-token target a decode step is held to: min of the TPOT and ITL targets set."""
        limits = [t for t in (self.tpot_s, self.itl_s) if t is not None]
        return min(limits) if limits else None

    @property
    def step_limit_words(self) -> str:
        """The name of the target ``step_limit_s`` is: 'per-request TPOT' or 'ITL'."""
        if self.tpot_s is not None and (self.itl_s is None or self.tpot_s <= self.itl_s):
            return WORDS["tpot"]
        return WORDS["itl"]

    @property
    def gap_limit_words(self) -> str:
        return WORDS["itl"] if self.itl_s is not None else WORDS["tpot"]

    @property
    def gap_limit_s(self) -> float | None:
        """What one stall (a prefill chunk in the step) is held to: the ITL target, else the TPOT target."""
        return self.itl_s if self.itl_s is not None else self.tpot_s

    @property
    def pct_label(self) -> str:
        return MEAN if self.is_mean else f"p{self.q:g}"

    def label(self, name: LatencyName) -> str:
        """'p99 TTFT', 'mean TPOT' (table headers)."""
        return f"{self.pct_label} {CONSTRAINT_OF[name]}"

    @property
    def ttft_label(self) -> str:
        return self.label("ttft")

    @property
    def itl_label(self) -> str:
        return self.label("itl")

    def text(self) -> str:
        """The SLO in words: 'p99 TTFT ≤ 2 s and p99 ITL ≤ 50 ms', 'mean TTFT ≤ 1 s and mean per-request TPOT
        ≤ 50 ms' (+ the goodput share)."""
        parts = [f"{self.pct_label} {WORDS[n]} ≤ {fmt_seconds(t)}" for n, t in self.targets.items()]
        out = " and ".join(parts) if parts else "no latency target"
        if self.goodput_frac > 0:
            out += f", goodput ≥ {fmt_pct(self.goodput_frac)}"
        return out


def goodput_targets(slo: Slo) -> str:
    """The per-request targets of the goodput in words: 'TTFT ≤ 2 s and TPOT ≤ 50 ms'."""
    parts = [(n, t) for n, t in (("TTFT", slo.ttft_s), ("TPOT", slo.goodput_tpot_s), ("E2E latency", slo.e2e_s))]
    said = [f"{n} ≤ {fmt_seconds(t)}" for n, t in parts if t is not None]
    return " and ".join(said) if said else "no per-request target"


def good_requests(r: Run, slo: Slo) -> np.ndarray:
    """Per request: served within every per-request target of the goodput (module doc; a one-token output
    has no TPOT)."""
    ok = r.status == SERVED
    if slo.ttft_s is not None:
        ok = ok & (r.ttft_s <= slo.ttft_s)
    tpot = slo.goodput_tpot_s
    if tpot is not None:
        ok = ok & ((r.output_tokens <= 1) | (r.tpot_s <= tpot))
    if slo.e2e_s is not None:
        ok = ok & (r.e2e_s <= slo.e2e_s)
    return ok


@dataclass(frozen=True)
class Verdict:
    """A simulation judged against an ``Slo``: each latency's statistic, the goodput, what failed."""

    met: bool
    ttft_q_s: float  # the SLO's statistic of TTFT, rejected requests counted as never served
    itl_q_s: float
    goodput_frac: float
    failed: tuple[str, ...]  # constraints of ``CONSTRAINTS`` the run missed (empty: met)
    kv_full: bool = False  # the KV cache filled (a preemption, or ≥ ``KV_FULL_FRAC`` of its blocks in use)
    tpot_q_s: float = float("nan")
    e2e_q_s: float = float("nan")

    def value(self, name: LatencyName) -> float:
        return {"ttft": self.ttft_q_s, "tpot": self.tpot_q_s, "itl": self.itl_q_s, "e2e": self.e2e_q_s}[name]

    def binding_text(self) -> str:
        """What missed, and why when the KV cache filled: 'TTFT (KV cache full)'."""
        text = " + ".join(self.failed)
        return text + (" (KV cache full)" if self.kv_full and KV not in self.failed and text else "")


class Judged(Run, Protocol):
    """What ``verdict`` reads besides the samples."""

    @property
    def stopped_early(self) -> bool: ...
    @property
    def summary(self) -> dict[str, float | bool]: ...


def verdict(r: Judged, slo: Slo, stats: dict[LatencyName, float] | None = None) -> Verdict:
    """``r`` against ``slo`` (module doc).  An empty TTFT or E2EL sample (nothing served) misses; an empty
    TPOT or ITL sample (one-token outputs) meets.  A run stopped early missed a target at ≥ 99; the one
    its recorded requests and tokens miss is named (TTFT when neither shows it yet).  ``stats``: each
    latency's ``statistic(r, name, slo.pct)``, where the caller has them already (``results.with_summary``)."""
    values = {n: statistic(r, n, slo.pct) for n in LATENCIES} if stats is None else dict(stats)
    for n in LATENCIES:  # an empty sample: nothing reached its first token (∞), or no gap to time (0)
        if np.isnan(values[n]):
            values[n] = float("inf") if n in ("ttft", "e2e") else 0.0
    good = good_requests(r, slo)
    goodput = float(good.mean()) if good.size else float("nan")
    failed = []
    served = r.status == SERVED
    if (r.status == REJECTED_KV).any():
        failed.append(KV)
    if not served.any() and TTFT not in [CONSTRAINT_OF[n] for n in slo.targets]:
        failed.append(TTFT)  # nothing served misses whatever the targets
    for n, target in slo.targets.items():
        if not values[n] <= target:
            failed.append(CONSTRAINT_OF[n])
    if slo.goodput_frac > 0 and not goodput >= slo.goodput_frac:
        failed.append(GOODPUT)
    if r.stopped_early and not failed:
        failed.append(TTFT)
    sm = r.summary
    kv_full = bool(sm.get("preemptions", 0.0) > 0 or sm.get("kv_used_max_frac", 0.0) >= KV_FULL_FRAC)
    return Verdict(
        not failed,
        values["ttft"],
        values["itl"],
        goodput,
        tuple(failed),
        kv_full,
        values["tpot"],
        values["e2e"],
    )


def meets_single_request(
    slo: Slo, ttft_s: np.ndarray, tpot_s: np.ndarray, e2e_s: np.ndarray | None = None
) -> np.ndarray:
    """The one-request check of the Compare GPUs table and the advisor (no queue, so no statistic): the
    TTFT within its target, the decode step (every gap and the request's TPOT) within the TPOT and ITL
    targets, the request's latency within the E2EL target.  Vectorised."""
    ok = np.ones(np.broadcast_shapes(np.shape(ttft_s), np.shape(tpot_s)), dtype=bool)
    if slo.ttft_s is not None:
        ok = ok & (np.asarray(ttft_s) <= slo.ttft_s)
    limit = slo.step_limit_s
    if limit is not None:
        ok = ok & (np.asarray(tpot_s) <= limit)
    if slo.e2e_s is not None and e2e_s is not None:
        ok = ok & (np.asarray(e2e_s) <= slo.e2e_s)
    return ok
