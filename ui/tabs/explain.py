"""The "Explain" tab: each headline figure's formula, the same formula with this
scenario's numbers substituted, and the engine's value (``planner.studies.explain``)."""

from __future__ import annotations

from planner.studies.explain import explain
from ui.format import md_escape
from ui.state import PageContext


def render(ctx: PageContext) -> None:
    st = ctx.st
    items = ctx.data.explain_items() if ctx.data is not None else explain(ctx.result)
    st.caption(
        "Each figure's formula, then the same formula with this scenario's numbers, then the engine's value; "
        "retype the middle line into a calculator to check it."
    )
    st.caption(md_escape(f"Every time figure rests on: {ctx.result.time_basis}"))
    for item in items:
        st.markdown(f"**{md_escape(item.title)}**")
        st.code(f"{item.formula}\n= {item.substituted}\n= {item.value}", language=None, wrap_lines=True)
