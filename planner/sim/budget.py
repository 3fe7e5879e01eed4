"""The simulator's work budget: the work a run will take, estimated from its workload before it
starts, against limits that keep one visitor's run from holding a core or gigabytes for minutes.

  steps   ≈ max(full batches, spaced arrivals), summed over the replicas:
    full batches     Σ prompt tokens / chunk  +  Σ output tokens · q / (chunk when decodes fill it, else batch)
                     (every scheduler step computes at most ``chunk`` tokens and decodes at most ``batch``
                     sequences; q = γ + 1 tokens per decode with speculative decoding)
    spaced arrivals  each request needs L = ⌈prompt / chunk⌉ + ⌈(output − 1) / E[a]⌉ steps of its own (one
                     token per decode step; E[a] tokens with speculation), and a replica steps while any of
                     its requests is in service: the union of the intervals [arrival, arrival + L · τ] over
                     the replica's requests, in steps of τ — τ the fastest step (one decode at context 1:
                     every step reads the weights).  Requests 1,000 s apart each take their own L steps
                     (issue 31 F2: 30 M steps where full batches said 30 k); requests that overlap share them.
                     The replicas' shares are taken round-robin (the router's own split is not known ahead).
  tokens  = Σ output tokens (with ``detail`` the simulator keeps one inter-token latency per token)
  slots   = replicas × requests (each replica keeps a few per-request records: ≈ ``SLOT_BYTES_ESTIMATE``)
Measured on this 2-core machine (benchmarks/sim_bench.py): ≈ 11 µs per mixed step (a run of decode steps
is advanced in one jump: ≈ 1 µs a step) and ≈ 16 bytes per recorded token, so the limits below are
≈ 30 s, ≈ 0.5 GB of records and ≈ 0.9 GB of replica records.  A run over any is refused before it
starts, with its estimate and the limit (``SimulationBudgetError``).
"""

from __future__ import annotations

import numpy as np

from planner.errors import ProblemsError
from planner.sim.config import SimConfig
from planner.sim.workload import Workload
from planner.units import GiB

MAX_SIM_STEPS = 3_000_000
MAX_SIM_OUTPUT_TOKENS = 30_000_000
MAX_SIM_REPLICA_SLOTS = 4_000_000
#: The estimated seconds per step, bytes per recorded token and bytes per replica × request behind the limits.
STEP_SECONDS_ESTIMATE = 11e-6
TOKEN_BYTES_ESTIMATE = 16
SLOT_BYTES_ESTIMATE = 215


class SimulationBudgetError(ProblemsError):
    """A simulation that would take more work than one run may (the estimate and the limit)."""


def _tokens_per_decode(cfg: SimConfig) -> float:
    """E[a]: tokens one decode step emits, (1 − α^(γ+1)) / (1 − α) with speculation, else 1."""
    if cfg.gamma == 0:
        return 1.0
    if cfg.alpha >= 1.0:
        return float(cfg.gamma + 1)
    return (1.0 - cfg.alpha ** (cfg.gamma + 1)) / (1.0 - cfg.alpha)


def _busy_steps(arrival_s: np.ndarray, own_steps: np.ndarray, step_s: float) -> float:
    """The union of [arrival, arrival + own_steps · step_s] in steps of ``step_s`` (arrivals sorted)."""
    if arrival_s.size == 0:
        return 0.0
    ends = arrival_s + own_steps * step_s
    before = np.concatenate(([-np.inf], np.maximum.accumulate(ends)[:-1]))  # the latest end of the earlier ones
    return float(np.maximum(ends - np.maximum(arrival_s, before), 0.0).sum() / step_s)


def estimated_steps(w: Workload, cfg: SimConfig, min_step_s: float | None = None, replicas: int = 1) -> float:
    """Scheduler steps the workload needs on ``replicas`` replicas (module doc); without ``min_step_s`` (τ)
    only the full-batch term."""
    q = cfg.gamma + 1
    prefill = float(w.prompt_tokens.sum()) / cfg.chunk_tokens
    decode_tokens = float(w.output_tokens.sum()) * q
    full = prefill + decode_tokens / max(min(cfg.batch * q, cfg.chunk_tokens), 1)
    if not min_step_s or min_step_s <= 0 or not np.isfinite(min_step_s) or len(w) == 0:
        return full
    own = np.ceil(w.prompt_tokens / cfg.chunk_tokens) + np.ceil(
        np.maximum(w.output_tokens - 1, 0) / _tokens_per_decode(cfg)
    )
    order = np.argsort(w.arrival_s, kind="stable")
    arrival_s, own = w.arrival_s[order], own[order]
    spaced = sum(_busy_steps(arrival_s[k::replicas], own[k::replicas], min_step_s) for k in range(replicas))
    return max(full, spaced)


def check_work_budget(w: Workload, cfg: SimConfig, min_step_s: float | None = None, replicas: int = 1) -> None:
    """SimulationBudgetError when the run would exceed ``MAX_SIM_STEPS``, ``MAX_SIM_OUTPUT_TOKENS`` or
    ``MAX_SIM_REPLICA_SLOTS`` (module doc)."""
    steps = estimated_steps(w, cfg, min_step_s, replicas)
    tokens = float(w.output_tokens.sum())
    slots = replicas * len(w)
    fleet = f" on {replicas:,} replicas" if replicas > 1 else ""
    problems = []
    if steps > MAX_SIM_STEPS:
        problems.append(
            f"simulation: ≈ {steps:,.0f} scheduler steps (≈ {steps * STEP_SECONDS_ESTIMATE:,.0f} s) for "
            f"{len(w):,} requests{fleet} at chunk={cfg.chunk_tokens:,} and batch={cfg.batch:,} (arrivals far apart "
            f"run each request's own steps); the limit is {MAX_SIM_STEPS:,} steps: simulate fewer requests "
            "(sim_requests), shorter prompts and outputs, a larger chunk or a higher rate"
        )
    if tokens > MAX_SIM_OUTPUT_TOKENS:
        problems.append(
            f"simulation: {tokens:,.0f} output tokens (≈ {tokens * TOKEN_BYTES_ESTIMATE / GiB:,.1f} GiB of "
            f"per-token records); the limit is {MAX_SIM_OUTPUT_TOKENS:,}: simulate fewer requests or shorter outputs"
        )
    if slots > MAX_SIM_REPLICA_SLOTS:
        problems.append(
            f"simulation: {replicas:,} replicas × {len(w):,} requests = {slots:,} replicas × requests (≈ "
            f"{slots * SLOT_BYTES_ESTIMATE / GiB:,.1f} GiB of per-replica records); the limit is "
            f"{MAX_SIM_REPLICA_SLOTS:,}: simulate fewer requests or replicas"
        )
    if problems:
        raise SimulationBudgetError(problems)
