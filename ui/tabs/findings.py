"""Findings panel: the advisor's ranked findings above the tabs.

One collapsed expander per finding, its severity as an icon and a word; inside,
the explanation, the action, its predicted effect and an "Apply" button per
proposed change (``ctx.update_scenario``).  Every text is Markdown-escaped, so
names that came from a link or a file show literally and nothing is rendered as
HTML.  A download button exports the findings CSV (``advisor.findings_frame``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from planner.export import frame_to_csv
from planner.studies.advisor import Finding, findings, findings_frame
from ui.format import md_escape
from ui.state import PageContext

#: Material icons (Streamlit ships the font), not colour emoji: a stock Linux browser without an emoji
#: font draws those as empty boxes.
SEVERITY_BADGE: dict[str, tuple[str, str]] = {
    "high": (":material/error:", "High"),
    "medium": (":material/warning:", "Medium"),
    "low": (":material/report:", "Low"),
    "info": (":material/info:", "Info"),
}
#: Two metric values closer than this (relative) are "no change": no Apply button for them.
SAME_REL = 1e-9
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


def changes_something(before: float, after: float) -> bool:
    """Whether a proposed change moves the finding's metric at all (an unchanged one gets no Apply)."""
    if math.isinf(before) and math.isinf(after):
        return before != after
    if not (math.isfinite(before) and math.isfinite(after)):
        return True
    return abs(after - before) > SAME_REL * max(abs(before), abs(after), 1e-300)


def replication_note(ctx: PageContext, changes: Mapping[str, Any]) -> str:
    """Said beside a change to a tp above the model's KV-head count: the KV heads are then replicated."""
    tp = changes.get("tp")
    model = ctx.result.resolved.model if ctx.result is not None else None
    if tp is None or model is None or model.is_mla or tp <= model.kv_heads:
        return ""
    return (
        f" At tp = {tp} the model's {model.kv_heads} KV heads are replicated: each GPU still holds a whole KV head, "
        f"so the KV cache per GPU stops shrinking beyond tp = {model.kv_heads}."
    )


def _option(
    ctx: PageContext, f: Finding, lead: str, action: str, changes: Mapping[str, Any], after: float, key: str
) -> None:
    """One proposed change after ``lead`` (bold): its words, and an Apply button only when it changes the metric."""
    st = ctx.st
    moves = bool(changes) and changes_something(f.before, after)
    suffix = "" if moves or not changes else " (changes nothing here)"
    st.markdown(f"**{lead}** " + md_escape(action + suffix + replication_note(ctx, changes)))
    if moves and st.button("Apply", key=key):
        ctx.update_scenario(**changes)


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
            _option(ctx, f, "Action:", f.action, f.changed_keys, f.after, f"findings-apply-{f.id}")
            st.markdown(f"**Predicted effect:** {md_escape(f.predicted_effect)}")
            for i, alt in enumerate(f.alternatives):
                _option(ctx, f, "Or:", alt.action, alt.changed_keys, alt.after, f"findings-apply-{f.id}-{i}")
    if items:
        st.download_button(
            "Download findings (CSV)",
            data=frame_to_csv(findings_frame(items)),
            file_name="kvplan-findings.csv",
            mime="text/csv",
            key="findings-csv",
        )
