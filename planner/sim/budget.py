"""The simulator's work budget: the work a run will take, estimated from its workload before it
starts, against limits that keep one visitor's run from holding a core or gigabytes for minutes.

  steps   ≈ Σ prompt tokens / chunk  +  Σ output tokens · q / (chunk when decodes fill it, else batch)
            (every scheduler step computes at most ``chunk`` tokens and decodes at most ``batch``
            sequences; q = γ + 1 tokens per decode with speculative decoding)
  tokens  = Σ output tokens (with ``detail`` the simulator keeps one inter-token latency per token)
Measured on this 2-core machine (benchmarks/sim_bench.py): ≈ 11 µs per step and ≈ 16 bytes per
recorded token, so the limits below are ≈ 30 s and ≈ 0.5 GB of records.  A run over either is
refused before it starts, with its estimate and the limit (``SimulationBudgetError``).
"""

from __future__ import annotations

from planner.errors import ProblemsError
from planner.sim.config import SimConfig
from planner.sim.workload import Workload
from planner.units import GiB

MAX_SIM_STEPS = 3_000_000
MAX_SIM_OUTPUT_TOKENS = 30_000_000
#: The estimated seconds per step and bytes per recorded token behind the limits (module doc).
STEP_SECONDS_ESTIMATE = 11e-6
TOKEN_BYTES_ESTIMATE = 16


class SimulationBudgetError(ProblemsError):
    """A simulation that would take more work than one run may (the estimate and the limit)."""


def estimated_steps(w: Workload, cfg: SimConfig) -> float:
    """Scheduler steps the workload needs at least (module doc)."""
    q = cfg.gamma + 1
    prefill = float(w.prompt_tokens.sum()) / cfg.chunk_tokens
    decode_tokens = float(w.output_tokens.sum()) * q
    decode = decode_tokens / max(min(cfg.batch * q, cfg.chunk_tokens), 1)
    return prefill + decode


def check_work_budget(w: Workload, cfg: SimConfig) -> None:
    """SimulationBudgetError when the run would exceed ``MAX_SIM_STEPS`` or ``MAX_SIM_OUTPUT_TOKENS``."""
    steps = estimated_steps(w, cfg)
    tokens = float(w.output_tokens.sum())
    problems = []
    if steps > MAX_SIM_STEPS:
        problems.append(
            f"simulation: ≈ {steps:,.0f} scheduler steps (≈ {steps * STEP_SECONDS_ESTIMATE:,.0f} s) for "
            f"{len(w):,} requests at chunk={cfg.chunk_tokens:,} and batch={cfg.batch:,}; the limit is "
            f"{MAX_SIM_STEPS:,} steps: simulate fewer requests (sim_requests), shorter prompts or a larger chunk"
        )
    if tokens > MAX_SIM_OUTPUT_TOKENS:
        problems.append(
            f"simulation: {tokens:,.0f} output tokens (≈ {tokens * TOKEN_BYTES_ESTIMATE / GiB:,.1f} GiB of "
            f"per-token records); the limit is {MAX_SIM_OUTPUT_TOKENS:,}: simulate fewer requests or shorter outputs"
        )
    if problems:
        raise SimulationBudgetError(problems)
