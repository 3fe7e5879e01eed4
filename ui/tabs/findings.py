"""Findings panel: the advisor's ranked findings above the tabs.

One collapsed expander per finding, its severity as an icon and a word; inside,
the explanation, the action, its predicted effect and an "Apply" button per
proposed change (``ctx.update_scenario``).  Every text is Markdown-escaped, so
names that came from a link or a file show literally and nothing is rendered as
HTML.  A download button exports the findings CSV (``advisor.findings_frame``).
"""

from __future__ import annotations

from planner.export import frame_to_csv
from planner.studies.advisor import Finding, findings, findings_frame
from ui.format import md_escape
from ui.state import PageContext

SEVERITY_BADGE: dict[str, tuple[str, str]] = {
    "high": ("🔴", "High"),
    "medium": ("🟠", "Medium"),
    "low": ("🟡", "Low"),
    "info": ("🔵", "Info"),
}
_CACHE_KEY = "_findings_cache"


def _findings(ctx: PageContext) -> list[Finding]:
    """Findings for the scenario on screen; the last answer is kept in session state
    (the advisor re-runs the engine a few dozen times)."""
    key = ctx.scenario.model_dump_json()
    cached = ctx.st.session_state.get(_CACHE_KEY)
    if cached is not None and cached[0] == key:
        return cached[1]
    items = findings(ctx.scenario, ctx.catalog)
    ctx.st.session_state[_CACHE_KEY] = (key, items)
    return items


def summary(items: list[Finding]) -> str:
    """``2 medium · 1 info``, most severe first."""
    counts = {sev: sum(f.severity == sev for f in items) for sev in SEVERITY_BADGE}
    return " · ".join(f"{n} {sev}" for sev, n in counts.items() if n) or "nothing to report"


def render(ctx: PageContext) -> None:
    st = ctx.st
    if ctx.result is None:
        return  # the page reports why the scenario cannot be evaluated
    items = _findings(ctx)
    st.markdown(f"**Findings** — {summary(items)}")
    for f in items:
        icon, word = SEVERITY_BADGE[f.severity]
        with st.expander(f"{word}: {md_escape(f.title)}", expanded=False, icon=icon):
            st.markdown(md_escape(f.explanation))
            st.markdown(f"**Action:** {md_escape(f.action)}")
            st.markdown(f"**Predicted effect:** {md_escape(f.predicted_effect)}")
            if f.changed_keys and st.button("Apply", key=f"findings-apply-{f.id}"):
                ctx.update_scenario(**f.changed_keys)
            for i, alt in enumerate(f.alternatives):
                st.markdown(f"**Or:** {md_escape(alt.action)}")
                if st.button("Apply", key=f"findings-apply-{f.id}-{i}"):
                    ctx.update_scenario(**alt.changed_keys)
    if items:
        st.download_button(
            "Download findings (CSV)",
            data=frame_to_csv(findings_frame(items)),
            file_name="kvplan-findings.csv",
            mime="text/csv",
            key="findings-csv",
        )
