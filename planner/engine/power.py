"""GPU power and energy at the scenario's load (docs/model.md §13 "Power and energy").  Pure.

Board power of one GPU during a step — the linear utilisation model of server power (Fan, Weber & Barroso,
"Power provisioning for a warehouse-sized computer", ISCA 2007: P(u) = P_idle + (P_busy − P_idle) · u), with the
utilisation split into the tensor cores' and the memory system's, as in Hong & Kim's integrated GPU power model
(ISCA 2010: runtime power = idle power + Σ over units of the unit's maximum power × its access rate):

    u_c = F / (peak · t)    the step's FLOP per GPU ÷ what the dense peak does in the step's time (achieved MFU)
    u_m = B / (bw · t)      its bytes ÷ what the memory bandwidth moves in that time (achieved MBU)
    u   = clip(a + b_c · u_c + b_m · u_m, 0, 1)
    P   = P_idle + (P_TDP − P_idle) · u

``a`` is the floor a serving engine's busy loop holds the board at (clocks up, a CUDA context, kernels back to back
even when they wait on memory); ``a, b_c, b_m`` (``POWER_COEFFS``) are fitted by ``benchmarks/power_fit.py`` to the
ML.ENERGY benchmark v3 (vLLM 0.11.1, steady-state board power) on its H100 SXM runs, with b_m ≥ 0, and checked on the
B200 runs, which the fit never sees (docs/model.md §13 reports the error).  The memory term fits to 0: memory-bound
decode sits at the floor (a·(TDP − idle) + idle ≈ 460 W on H100; Splitwise's phase constants are 380 W decode,
700 W prefill), a compute-bound prefill at the TDP.  ``P_TDP`` is the profile's ``tdp_w`` (or the scenario's
``gpu_power_w``, a power cap), ``P_idle`` its ``idle_w`` or ``DEFAULT_IDLE_FRAC`` × TDP where none is published.

A replica serving B streams spends B · TTFT of every B · TTFT + O · TPOT of GPU time in prefill (the serving
rate's own split, ``evaluate._rates``), so

    P_gpu      = f_p · P(prefill step) + (1 − f_p) · P(decode step at the batch),   f_p = B·TTFT / (B·TTFT + O·TPOT)
    P_it       = P_gpu + P_host,     P_host = server_power_w_per_gpu − tdp_w (the server's non-GPU nameplate share,
                                     an upper bound; 0 where the profile publishes no server power)
    replica    = GPUs · P_it ;   site = replica · PUE
    J / token  = GPUs · P_gpu / serving rate         (board energy per output token, ML.ENERGY's measure)
    kWh / Mtok = site power / serving rate · 10⁶ / 3.6·10⁶ ;   energy cost = kWh / Mtok × electricity price

A speculative decode step is priced at the plain step's utilisation (its draft and verify passes are the same mix
of memory- and compute-bound work).  A profile with no published board power (``tdp_w`` unset) and no
``gpu_power_w`` gives NaN ("n/a") for every power metric.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from planner.engine.power_inputs import DEFAULT_IDLE_FRAC

if TYPE_CHECKING:  # engine.inputs builds its power fields with ``power_fields`` below
    from planner.engine.inputs import Array, EngineInputs
    from planner.engine.roofline import StepCost

#: (a, b_c, b_m) of u = a + b_c · u_c + b_m · u_m (module doc); benchmarks/power_fit.py prints the fit.
POWER_COEFFS = (0.615, 0.931, 0.0)
J_PER_KWH = 3.6e6
TOKENS_PER_MTOK = 1e6


def step_shares(x: EngineInputs, step: StepCost) -> tuple[Array, Array]:
    """(u_c, u_m) of one step: achieved FLOP/s ÷ the dense peak, achieved bytes/s ÷ the bandwidth (module doc)."""
    t = np.asarray(step.time_s, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        uc = np.clip(np.asarray(step.flop, dtype=float) / (x.peak_flop_per_s * t), 0.0, 1.0)
        um = np.clip(np.asarray(step.bytes, dtype=float) / (x.bandwidth_bytes_per_s * t), 0.0, 1.0)
    return uc, um


def step_utilisation(x: EngineInputs, step: StepCost, coeffs: tuple[float, float, float] = POWER_COEFFS) -> Array:
    """u of one step (module doc)."""
    a, bc, bm = coeffs
    uc, um = step_shares(x, step)
    return np.clip(a + bc * uc + bm * um, 0.0, 1.0)


def board_power_w(x: EngineInputs, step: StepCost) -> Array:
    """P of one GPU during ``step``: P_idle + (P_TDP − P_idle) · u (module doc)."""
    return x.idle_w + (x.tdp_w - x.idle_w) * step_utilisation(x, step)


def prefill_share(x: EngineInputs, ttft_s: Array, tpot_s: Array) -> Array:
    """f_p: the share of a replica's GPU time its prompts' prefills take (module doc)."""
    pre = x.batch * ttft_s
    return pre / (pre + x.output_tokens * tpot_s)


def power_metrics(
    x: EngineInputs, pre: StepCost, dec: StepCost, ttft_s: Array, tpot_s: Array, serving_rate: Array, gpus: Array
) -> dict[str, Array]:
    """The power and energy metrics (module doc; names in ``engine.metrics``)."""
    f_p = prefill_share(x, ttft_s, tpot_s)
    p_pre, p_dec = board_power_w(x, pre), board_power_w(x, dec)
    p_gpu = f_p * p_pre + (1.0 - f_p) * p_dec
    replica_w = gpus * (p_gpu + x.host_power_w_per_gpu)
    site_w = replica_w * x.pue
    kwh_per_mtok = site_w / serving_rate * TOKENS_PER_MTOK / J_PER_KWH
    with np.errstate(invalid="ignore", divide="ignore"):
        limit_replicas = np.where(x.power_limit_w > 0, np.floor(x.power_limit_w / replica_w), np.inf)
    return dict(
        power_per_gpu_w=p_gpu,
        prefill_power_per_gpu_w=p_pre,
        decode_power_per_gpu_w=p_dec,
        prefill_time_frac=f_p,
        replica_power_kw=replica_w / 1e3,
        replica_site_power_kw=site_w / 1e3,
        energy_per_output_token_j=gpus * p_gpu / serving_rate,
        kwh_per_million_output_tokens=kwh_per_mtok,
        energy_cost_per_million_output_tokens_usd=kwh_per_mtok * x.electricity_usd_per_kwh,
        replicas_within_power_limit=limit_replicas,
    )


__all__ = [
    "DEFAULT_IDLE_FRAC",
    "POWER_COEFFS",
    "board_power_w",
    "power_metrics",
    "prefill_share",
    "step_shares",
    "step_utilisation",
]
