"""Compare scenarios tab: pin the scenario as a baseline (kept in the link, key ``base``) and read
every headline metric of the current one beside the pinned one's, with the change.

While a baseline is pinned the headline's deltas are against it too (``ui.headline``).  Pinning
stores the pinned scenario's own query (``planner.studies.baseline.pin_query``), so a shared link
carries both scenarios.
"""

from __future__ import annotations

import pandas as pd

from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.format import fmt_bytes, fmt_num, fmt_pct, fmt_seconds, fmt_sequences, fmt_tokens_per_s, fmt_usd
from planner.studies.baseline import compare_frame, differing_keys, pin_query, pinned_scenario
from ui.format import download_csv, md_escape, md_list, md_text
from ui.state import PageContext

_FORMATS = {
    "B": fmt_bytes,
    "s": fmt_seconds,
    "tokens/s": fmt_tokens_per_s,
    "USD": fmt_usd,
    "USD/h": lambda v: fmt_usd(v) + "/h",
    "share": fmt_pct,
    "×": lambda v: fmt_num(v) + "×",
    "sequences": fmt_sequences,
}


def _shown(value: float, unit: str) -> str:
    return _FORMATS[unit](value)


def _change(row: pd.Series) -> str:
    if row["change_kind"] == "points":
        return f"{row['change'] * 100:+.1f} pts"
    return fmt_pct(row["change"], signed=True) if pd.notna(row["change"]) else "n/a"


def comparison_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The compared metrics as text: metric, pinned, current, change, better."""
    return pd.DataFrame(
        {
            "metric": frame["label"],
            "pinned": [_shown(v, u) for v, u in zip(frame["pinned"], frame["unit"], strict=True)],
            "current": [_shown(v, u) for v, u in zip(frame["current"], frame["unit"], strict=True)],
            "change": [_change(r) for _, r in frame.iterrows()],
            "better": ["yes" if b else "" for b in frame["better"]],
        }
    )


def _buttons(ctx: PageContext, pinned: bool) -> None:
    st = ctx.st
    b1, b2, _ = st.columns([1, 1, 2])
    label = "Pin the current scenario instead" if pinned else "Pin this scenario as the baseline"
    if b1.button(label, icon=":material/push_pin:", key="_cmp_pin"):
        ctx.update_scenario(base=pin_query(ctx.scenario))
    if pinned and b2.button("Unpin", icon=":material/close:", key="_cmp_unpin"):
        ctx.update_scenario(base="")


def render(ctx: PageContext) -> None:
    st, s = ctx.st, ctx.scenario
    base, problems = pinned_scenario(s, ctx.catalog)
    if base is None:
        st.info(
            "Pin this scenario, then change anything in the sidebar (or pick a point in Search & frontier): "
            "every headline metric is shown against the pinned one, and the link keeps both."
        )
        _buttons(ctx, pinned=False)
        return
    if problems:
        st.warning("The pinned link has values this version rejects (their defaults are used):\n\n" + md_list(problems))
    _buttons(ctx, pinned=True)
    diff = differing_keys(s, base)
    if diff:
        st.markdown(
            md_text("**Changed since pinning:** ") + ", ".join(md_escape(f"{k} {a!r} → {b!r}") for k, a, b in diff)
        )
    else:
        st.caption("The current scenario is the pinned one.")
    if ctx.result is None:
        st.info("The current scenario cannot be evaluated (see the error above).")
        return
    try:
        pinned = evaluate(base, ctx.catalog)
    except ScenarioError as exc:
        st.error("The pinned scenario cannot be evaluated:\n\n" + md_list(exc.problems))
        return
    frame = compare_frame(ctx.result, pinned)
    st.dataframe(comparison_table(frame), hide_index=True)
    st.caption("Change: current ÷ pinned − 1 (the prompt-cache saving: in percentage points).")
    download_csv(st, "Comparison CSV", frame, "compare-scenarios")
