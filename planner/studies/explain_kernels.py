"""Explain on the measured-kernel basis: a step's time as the sum of the kernels its shapes run
(docs/model.md §4–5 "Measured kernels"; ``planner.engine.kernel_step``), with this scenario's numbers.

The kernels' times are looked up in measured tables, not computed by a formula a reader could retype,
so the substituted arithmetic writes each looked-up term as its value (seconds, all layers) and sums
them; the formula names each term, its shape and the table it comes from (``Scalars.basis``).
"""

from __future__ import annotations

import numpy as np

from planner.engine import parallel
from planner.engine.kernel_step import equivalent_prompt_tokens, kernel_terms
from planner.engine.roofline import StepCost, decode, decode_attention_ratio, prefill
from planner.studies.explain_scenario import KERNEL_STEP, Scalars
from planner.studies.explain_text import ExplainItem, _seconds_value, exact, num


def step_substitution(s: Scalars, cost: StepCost) -> str:
    """A step's parts on the kernel basis, each its value: t_0 + matmul kernels + attention kernels + comm
    (+ the pipeline's rest, − the exchange two-batch overlap hides)."""
    parts = [cost.overhead_s, cost.matmul_s, cost.attention_s, cost.comm_s]
    text = " + ".join(exact(float(np.asarray(v))) for v in parts)
    if float(np.asarray(cost.pipeline_s)) > 0:
        text += f" + {exact(float(np.asarray(cost.pipeline_s)))}"
    if float(np.asarray(cost.hidden_s)) > 0:
        text += f" - {exact(float(np.asarray(cost.hidden_s)))}"
    return _host_bound(text, float(np.asarray(cost.host_s)))


def _host_bound(text: str, host_s: float) -> str:
    """max(the step's parts, h · (B + prompts)) where the host's work is counted (``efficiency.host_bound_s``)."""
    return f"max({text}, {exact(host_s)})" if host_s > 0 else text


def _terms_text(t: dict, overhead: float, host_s: float, moe_time_ratio: float = 1.0) -> str:
    def v(name: str) -> str:
        return exact(float(np.asarray(t[name])))

    text = f"{exact(overhead)} + {v('tokens')} + {v('head')}"
    experts = float(np.asarray(t["experts"]))
    if experts > 0:
        r = moe_time_ratio
        text += f" + {exact(r)} · {exact(experts / r)}" if r != 1.0 else f" + {v('experts')}"
    text += f" + {v('elementwise')} + {v('decode')} · {v('ratio')}"
    if float(np.asarray(t["prefill"])) > 0:
        text += f" + {v('prefill')}"
    return _host_bound(text + f" + {v('comm')}", host_s)


def kernel_items(s: Scalars) -> list[ExplainItem]:
    """The prefill and the decode step term by term (plain tensor parallelism in one node)."""
    if not s.kernels or not s.plain:
        return []
    x = s.x.as_arrays()
    m = s.m
    pre, dec = prefill(x), decode(x)
    ctx = s.P + s.O / 2.0
    tp_pre = pre.comm_s - pre.exchange_s
    tp_dec = dec.comm_s - dec.exchange_s
    t_pre = kernel_terms(x, 0.0, 1.0, 0.0, s.P, 0.0, 1.0, None, 1.0, tp_pre)
    ratio = decode_attention_ratio(x, s.B, 1.0, ctx)
    t_dec = kernel_terms(x, s.B, 1.0, ctx, 0.0, 0.0, 0.0, None, ratio, tp_dec)
    n_ar = num(float(np.asarray(parallel.tp_allreduces(x)))) if s.tp > 1 else "0"
    seq = num(float(np.asarray(equivalent_prompt_tokens(s.P, 0.0))))
    r_moe = float(np.asarray(x.moe_time_ratio))
    return [
        ExplainItem(
            "Prefill on measured kernels (the whole prompt: TTFT without a prefix-cache hit)",
            f"{KERNEL_STEP} with T = P = {num(s.P)}, one prompt (S_eq = {seq}), n_AR = {n_ar}  [{s.basis}]",
            _terms_text(t_pre, float(np.asarray(pre.overhead_s)), float(np.asarray(pre.host_s)), r_moe),
            _seconds_value(m["ttft_nocache_s"]),
        ),
        ExplainItem(
            "Decode step on measured kernels",
            f"{KERNEL_STEP} with T = B = {num(s.B)} at ctx = P + O/2 = {num(ctx)}, n_AR = {n_ar}  [{s.basis}]",
            _terms_text(t_dec, float(np.asarray(dec.overhead_s)), float(np.asarray(dec.host_s)), r_moe),
            _seconds_value(m["plain_tpot_s"]),
        ),
    ]
