"""The SLO's widgets, shared by the sidebar (keys named like the link's) and the tabs' forms (their own key
prefix): the statistic (mean or a percentile) and the four targets, each blank when unset
(``planner.sim.slo`` defines them)."""

from __future__ import annotations

from typing import Any

from planner.links import DEFAULTS, FIELDS

#: The statistics offered (a link's other percentile is added to the list).
STAT_CHOICES: tuple[float | str, ...] = ("mean", 50.0, 90.0, 95.0, 99.0, 99.9)
#: key, label, step, smallest value, help
TARGETS = (
    ("slo_ttft_s", "TTFT target (s)", 0.1, 0.001, "Time to first token, per request; rejected requests never get one."),
    (
        "slo_tpot_s",
        "TPOT target (s)",
        0.005,
        0.0001,
        "Time per output token of each request, as vllm bench serve reports TPOT: (E2E latency − TTFT) / "
        "(output tokens − 1).",
    ),
    (
        "slo_itl_s",
        "ITL target (s)",
        0.005,
        0.0001,
        "Inter-token latency: every gap between two tokens, over tokens (a chunked prefill's stall shows here).",
    ),
    ("slo_e2e_s", "E2E latency target (s)", 1.0, 0.001, "End-to-end latency of each request (vllm bench's E2EL)."),
)


def stat_label(v: float | str) -> str:
    return "mean" if v == "mean" else f"p{float(v):g}"


def stat_input(st: Any, key: str, current: float | str, help_more: str = "") -> Any:
    """The statistic every target holds: a select of ``STAT_CHOICES`` (and ``current``)."""
    options = list(STAT_CHOICES) + ([current] if current not in STAT_CHOICES else [])
    return st.selectbox(
        "SLO statistic",
        options,
        format_func=stat_label,
        key=key,
        help="What each target holds: the mean, or a percentile (TTFT, TPOT and E2E latency over requests, ITL "
        "over tokens); p99 is what links before meant." + help_more,
    )


def _upper(name: str) -> float:
    return next(float(m.le) for m in FIELDS[name].metadata if getattr(m, "le", None) is not None)


def target_inputs(st: Any, prefix: str, columns: int = 2) -> None:
    """The four targets, ``columns`` per row; a blank box unsets its target."""
    cols = st.columns(columns)
    for k, (name, label, step, floor, text) in enumerate(TARGETS):
        current = st.session_state.get(prefix + name, getattr(DEFAULTS, name))
        cols[k % columns].number_input(
            label,
            min_value=min(floor, current) if current is not None else floor,
            max_value=_upper(name),
            step=step,
            format="%g",
            value=None,
            placeholder="unset",
            key=prefix + name,
            help=text + " Seconds; blank = no target.",
        )
