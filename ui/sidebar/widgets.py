"""The sidebar's input widgets: number boxes, sliders and a slider mirrored by a number box."""

from __future__ import annotations

from typing import Any

from planner.format import fmt_count
from planner.links import DEFAULTS
from ui.sidebar.options import (
    SLIDER_OF,
    field_bounds,
)


def int_input(st: Any, key: str, label: str, help: str, step: int = 1, max_value: int | None = None, **kw: Any) -> Any:
    lo, hi, _ = field_bounds(key)
    return st.number_input(
        label,
        min_value=int(lo),
        max_value=int(hi if max_value is None else max_value),
        step=step,
        key=key,
        help=help,
        **kw,
    )


def float_input(st: Any, key: str, label: str, help: str, step: float, floor: float | None = None, **kw: Any) -> Any:
    """A float number input; a strict lower bound (> 0) uses ``floor`` or the current value if smaller."""
    lo, hi, strict = field_bounds(key)
    if strict:
        current = st.session_state.get(key)
        lo = min(floor, current) if current is not None else floor
    return st.number_input(
        label, min_value=float(lo), max_value=float(hi), step=step, format="%g", key=key, help=help, **kw
    )


def slider(st: Any, key: str, label: str, help: str, step: float = 0.01, fmt: str = "%.2f", **kw: Any) -> Any:
    lo, hi, _ = field_bounds(key)
    return st.slider(label, min_value=float(lo), max_value=float(hi), step=step, format=fmt, key=key, help=help, **kw)


def sync_slider(st: Any, key: str) -> None:
    """The stepped slider follows its number box (a callback: runs before the next script run)."""
    st.session_state[key] = st.session_state[SLIDER_OF[key]]


def boxed_slider(st: Any, key: str, label: str, help: str, stops: tuple[int, ...], step: int) -> None:
    """A number box (the link key: any value in range) and under it a slider over ``stops`` (and the
    current value) that sets the box — one key press moves a stop, not one unit."""
    ss = st.session_state
    current = int(ss.get(key, getattr(DEFAULTS, key)))
    ss[SLIDER_OF[key]] = current
    int_input(st, key, label, help, step=step)
    st.select_slider(
        f"{label} (stepped)",
        options=sorted(set(stops) | {current}),
        key=SLIDER_OF[key],
        format_func=fmt_count,
        on_change=sync_slider,
        args=(st, key),
        label_visibility="collapsed",
        help=help,
    )
