"""A step's time with this scenario's numbers: the plain formula t_0 + R(c_mm, m_mm) + R(c_att, m_att) +
t_comm, or beyond one node's tensor parallelism the layout's (``explain_parallel.step_substitution``)."""

from __future__ import annotations

from planner.engine.roofline import StepCost
from planner.studies.explain_kernels import step_substitution as kernel_substitution
from planner.studies.explain_parallel import step_substitution
from planner.studies.explain_scenario import Scalars
from planner.studies.explain_text import num


def step_time(
    s: Scalars,
    cost: StepCost,
    tokens: float,
    logit_tokens: float,
    prefill_tokens: float,
    step: dict[str, float] | None = None,
) -> str:
    """t_0 + R(c_mm, m_mm) + R(c_att, m_att) + t_comm with this step's numbers; beyond one node's tensor
    parallelism, the layout's (``explain_parallel.step_substitution``, from ``step``: step_cost's arguments)."""
    if s.kernels:
        return kernel_substitution(s, cost)
    if not s.plain:
        return step_substitution(s, cost, step or {})

    def part(c: str, m: str) -> str:
        if s.o == 1.0:
            return f"max({c}, {m})"
        return f"(max({c}, {m}) + (1 - {num(s.o)}) · min({c}, {m}))"

    mm = part(
        s.matmul_compute(tokens, logit_tokens),
        f"{num(float(cost.matmul_bytes))} / ({num(s.bw)} · {num(s.mbu)})",
    )
    att = part(
        f"{num(float(cost.attention_flop))} / ({num(s.peak16)} · {num(s.a_c)})",
        f"{num(float(cost.attention_bytes))} / ({num(s.bw)} · {num(s.a_m)})",
    )
    return f"{s.overhead(prefill_tokens)} + {mm} + {att} + {s.comm(tokens)}"
