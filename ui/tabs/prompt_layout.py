"""The "Prompt layout" tab: the layout checker and the usage-log audit.

The layout lives in the link (``Scenario.layout``, compact encoding of
``planner.prompts.layout``); every edit goes back through
``ctx.update_scenario(layout=…)``, and then the headline's prompt-cache card shows this
tab's verdict (``ui.prompt_source``: one source of truth).  Without a layout the tab starts
from the sidebar's workload: its prompt, cacheable prefix and requests/min.  The audit runs
on an uploaded log (or the committed example) in the uploads' worker (``ui.jobs.UPLOADS``, kind
``audit_usage``: never in the server process), and its report is kept in that pool's byte-bounded
cache keyed by the file's hash and the prices, so reruns do not parse it again.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd

from planner.errors import LayoutError
from planner.export import frame_to_csv, present_frame
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_usd
from planner.model.api_pricing import CACHE_READ_MULTIPLIER, CACHE_WRITE_MULTIPLIER
from planner.model.catalog import DATA
from planner.prompts.layout import (
    DEFAULT_LAYOUT,
    KINDS,
    MAX_PROMPT_TOKENS,
    VARIABILITIES,
    Layout,
    LayoutSettings,
    decode,
    encode,
    layout_frame,
    layout_from_frame,
)
from planner.prompts.layout_report import LayoutReport, analyse, traffic_for
from planner.prompts.layout_suggest import suggest
from planner.prompts.usage_audit import MAX_FILE_BYTES, AuditReport
from planner.units import TOKENS_PER_MTOK, MiB
from ui.figures.prompts import audit_figure, layout_figure
from ui.figures.theme import PLOTLY_CONFIG
from ui.format import MAX_TABLE_ROWS, md_escape, md_list, table
from ui.prompt_source import layout_source
from ui.state import PageContext
from ui.tabs.runs import content_key, upload_job

EXAMPLE_LOG = DATA / "examples" / "usage_log_example.jsonl"
EXAMPLE_STATE = "_pl_use_example"
PROBLEMS_SHOWN = 200
MAX_RPM = 1_000_000.0  # requests per minute the editor accepts
GROUP_COLUMNS = (
    "group",
    "requests",
    "cache_hit_rate",
    "invalidated",
    "requests_writing",
    "cache_read_tokens",
    "cache_creation_tokens",
    "input_tokens",
    "output_tokens",
    "paid_usd",
    "ideal_usd",
)


def render(ctx: PageContext) -> None:
    st = ctx.st
    st.subheader("Prompt layout")
    st.caption(
        "Describe one request as blocks in the order the API renders them (tools → system → messages), how each "
        "varies between requests, and where the cache breakpoints are. Variability: stable = identical for every "
        "request; per_day / per_user = shared by one day's or one user's requests; per_request = never sent twice."
    )
    layout = _current_layout(st, ctx)
    edited = _editor(st, ctx, layout)
    if edited is not None and encode(edited) != encode(layout):
        ctx.update_scenario(layout=encode(edited))
    if ctx.result is None:
        st.info("The layout's costs need a scenario that can be evaluated (see the error above).")
    else:
        _checker(st, ctx, layout)
    st.divider()
    _audit_section(st, ctx)


# ---------------------------------------------------------------- layout


def _current_layout(st: Any, ctx: PageContext) -> Layout:
    """The scenario's layout, or the sidebar's workload as one (``ui.prompt_source``), with a caption saying which."""
    if ctx.result is None:
        return decode(ctx.scenario.layout) if ctx.scenario.layout else decode(DEFAULT_LAYOUT)
    source = layout_source(ctx.result)
    if source.problems:
        st.error(
            "The layout in the link could not be read; the sidebar's workload is shown instead:\n\n"
            + md_list(source.problems)
        )
    if source.origin == "link":
        st.caption("The layout in the link. The headline's API prompt-cache card shows this tab's verdict.")
    else:
        st.caption(md_escape(_sidebar_words(ctx, source.layout)))
    c1, c2 = st.columns([1, 3])
    if source.origin == "link" and c1.button("Start from the sidebar", key="pl_from_sidebar"):
        ctx.update_scenario(layout="")
    if ctx.scenario.layout != DEFAULT_LAYOUT and c2.button(
        "Load the example (a timestamp before the breakpoint)", key="pl_example_layout"
    ):
        ctx.update_scenario(layout=DEFAULT_LAYOUT)
    return source.layout


def _sidebar_words(ctx: PageContext, layout: Layout) -> str:
    """How the sidebar's workload became the layout shown."""
    s, m = ctx.scenario, ctx.result.metrics
    rest = s.prompt - s.prefix
    blocks = (
        f"the {fmt_count(s.prefix)}-token cacheable prefix as one stable block with a breakpoint, then "
        f"{fmt_count(rest)} tokens that change per request"
        if s.prefix > 0
        else f"{fmt_count(s.prompt)} tokens that change per request (no cacheable prefix)"
    )
    if s.rpm > 0:
        traffic = (
            f"{fmt_num(s.rpm)} requests/min (sidebar). The sidebar's hit rate ({fmt_num(m['cache_hit_rate'])}) counts "
            "the TTL from each arrival; this checker counts it from each request's start, so a long request sees a "
            "slightly lower one"
        )
    elif layout.settings.rpm is not None and s.prefix > 0:
        traffic = (
            f"{fmt_num(layout.settings.rpm)} requests/min, the traffic that gives the sidebar's hit rate "
            f"{fmt_num(m['cache_hit_rate'])} here (the sidebar's requests/min is 0: it sets the hit rate itself)"
        )
    else:
        traffic = "the sidebar's requests/min"
    return (
        f"Starting from the sidebar's workload: {blocks}; {traffic}. Edit the blocks to describe the real request; "
        "the edited layout goes into the link and the headline's API prompt-cache card follows it."
    )


def _editor(st: Any, ctx: PageContext, layout: Layout) -> Layout | None:
    """The block table and the traffic settings; the edited layout, or None when invalid."""
    tag = hashlib.sha256(encode(layout).encode()).hexdigest()[:12]  # fresh widgets for each layout
    cc = st.column_config
    frame = st.data_editor(
        layout_frame(layout),
        key=f"pl_blocks_{tag}",
        num_rows="dynamic",
        hide_index=True,
        width="stretch",
        column_config={
            "kind": cc.SelectboxColumn("kind", options=list(KINDS), required=True),
            "tokens": cc.NumberColumn("tokens", min_value=1, max_value=MAX_PROMPT_TOKENS, step=1, required=True),
            "variability": cc.SelectboxColumn("variability", options=list(VARIABILITIES), required=True),
            "breakpoint": cc.CheckboxColumn("breakpoint", help="cache_control on this block"),
        },
    )
    s = layout.settings
    rpm_default = s.rpm if s.rpm is not None else float(ctx.scenario.rpm)
    c1, c2, c3, c4 = st.columns(4)
    rpm = c1.number_input(
        "requests / min (whole workload)", min_value=0.0, max_value=MAX_RPM, value=rpm_default, key=f"pl_rpm_{tag}"
    )
    users = c2.number_input(
        "distinct users or conversations",
        min_value=1,
        max_value=1_000_000_000,
        value=s.users,
        step=1,
        key=f"pl_users_{tag}",
    )
    dur = c3.number_input(
        "request duration, s (0 = engine estimate)",
        min_value=0.0,
        max_value=86_400.0,
        value=float(s.dur_s or 0.0),
        key=f"pl_dur_{tag}",
        help="The TTL counts from the start of a request: a long stream eats the window.",
    )
    auto = c4.checkbox("automatic caching (uses one breakpoint)", value=s.auto, key=f"pl_auto_{tag}")
    settings = LayoutSettings(
        rpm=None if (s.rpm is None and rpm == rpm_default) else float(rpm),
        users=int(users),
        dur_s=float(dur) if dur > 0 else None,
        auto=bool(auto),
    )
    try:
        return layout_from_frame(frame, settings)
    except LayoutError as exc:
        st.error("The edited layout is not valid:\n\n" + md_list(exc.problems))
        return None


def _checker(st: Any, ctx: PageContext, layout: Layout) -> None:
    x = ctx.result.inputs
    ttl = ctx.scenario.ttl
    traffic = traffic_for(layout, x)
    rep = analyse(layout, x, ttl, traffic)
    sug = suggest(layout, x, ttl, traffic)
    st.caption(
        md_escape(
            f"{fmt_count(rep.total_tokens)} prompt tokens, {fmt_num(traffic.rpm)} requests/min, "
            f"{fmt_count(traffic.users)} user(s), request duration {fmt_seconds(traffic.request_duration_s)}, "
            f"TTL {ttl} (sidebar), minimum cacheable prefix {fmt_count(rep.min_cacheable_tokens)} tokens, "
            f"break-even hit rate {fmt_pct(rep.break_even_hit_rate_frac)}."
        )
    )
    for f in rep.findings:
        text = f"{md_escape(f.message)}\n\n**Fix:** {md_escape(f.fix)}"
        {"error": st.error, "warning": st.warning, "info": st.info}[f.severity](text)
    _metrics(st, rep)
    st.plotly_chart(
        layout_figure([("Your layout", rep), ("Suggested", sug.report)]), key="pl_layout_chart", config=PLOTLY_CONFIG
    )
    if len(rep.breakpoints_frame):
        cc = st.column_config
        st.dataframe(
            rep.breakpoints_frame,
            hide_index=True,
            key="pl_breakpoints",
            column_config={
                "prefix_tokens": cc.NumberColumn("prefix tokens"),
                "reusable_prefix_tokens": cc.NumberColumn(
                    "reusable tokens", help="ends at the first per-request block"
                ),
                "shared_by": "shared by",
                "above_minimum": cc.CheckboxColumn("≥ minimum"),
                "cache_hit_rate": cc.NumberColumn("hit rate", format="percent"),
                "pays": cc.CheckboxColumn("pays", help="cached, and the hit rate beats break-even"),
            },
        )
    _suggestion(st, ctx, layout, rep, sug)
    st.download_button(
        "Layout CSV",
        data=frame_to_csv(present_frame(rep.blocks_frame)),
        file_name="kvplan-prompt-layout.csv",
        mime="text/csv",
        key="pl_csv",
        on_click="ignore",
        icon=":material/download:",
    )


def _cost_text(rep: LayoutReport, attr: str) -> str:
    v = getattr(rep, attr)
    return "rejected (HTTP 400)" if v is None else fmt_usd(v)


def _metrics(st: Any, rep: LayoutReport) -> None:
    c1, c2, c3, c4 = st.columns(4)
    saving = rep.saving_frac
    c1.metric(
        "API prompt-cache saving",
        "rejected" if saving is None else fmt_pct(saving),
        help="1 − cost with this layout's caching ÷ cost without (negative: a surcharge); API token prices. "
        "The headline's card shows the same figure once the layout is in the link.",
    )
    c2.metric(
        "API cost / request",
        _cost_text(rep, "cost_per_request_usd"),
        delta=None
        if rep.cost_per_request_usd is None
        else f"{fmt_usd(rep.cost_per_request_usd - rep.nocache_cost_per_request_usd)} vs no cache",
        delta_color="inverse",
        help=f"No caching: {fmt_usd(rep.nocache_cost_per_request_usd)} per request.",
    )
    c3.metric(
        "API cost / month",
        _cost_text(rep, "cost_per_month_usd"),
        help=md_escape(f"30 days at this rate; no caching: {fmt_usd(rep.nocache_cost_per_month_usd)}"),
    )
    saved = rep.ttft_saved_s
    c4.metric(
        "TTFT saved",
        "n/a" if saved is None else "none" if saved <= 0 else fmt_seconds(saved),
        help=f"Expected TTFT {fmt_seconds(rep.ttft_s) if rep.ttft_s is not None else 'n/a'} against "
        f"{fmt_seconds(rep.ttft_nocache_s)} uncached (roofline prefill on the scenario's GPU).",
    )


def _suggestion(st: Any, ctx: PageContext, layout: Layout, rep: LayoutReport, sug) -> None:
    st.markdown("**Suggested layout**")
    same = encode(sug.layout) == encode(layout) and sug.ttl == ctx.scenario.ttl
    if same:
        st.success("Your layout is already the cheapest this checker finds.")
        return
    after = sug.report
    table = pd.DataFrame(
        {
            "": ["cost / request", "cost / month", "expected TTFT"],
            "yours": [
                _cost_text(rep, "cost_per_request_usd"),
                _cost_text(rep, "cost_per_month_usd"),
                "n/a" if rep.ttft_s is None else fmt_seconds(rep.ttft_s),
            ],
            "suggested": [
                _cost_text(after, "cost_per_request_usd"),
                _cost_text(after, "cost_per_month_usd"),
                "n/a" if after.ttft_s is None else fmt_seconds(after.ttft_s),
            ],
        }
    )
    st.dataframe(table, hide_index=True, key="pl_before_after")
    st.markdown("\n".join(f"- {md_escape(c)}" for c in sug.changes))
    st.code(encode(sug.layout), language=None)
    if st.button("Apply the suggestion", key="pl_apply", icon=":material/auto_fix_high:"):
        ctx.update_scenario(layout=encode(sug.layout), ttl=sug.ttl)


# ---------------------------------------------------------------- audit


def _audit_section(st: Any, ctx: PageContext) -> None:
    st.subheader("Usage-log audit")
    st.caption(
        "A JSON-lines or CSV file of the API's usage fields: input_tokens, cache_creation_input_tokens, "
        "cache_read_input_tokens, output_tokens, optional timestamp (ISO 8601 or epoch seconds) and group (the "
        f"prefix the requests should share). At most {fmt_bytes(MAX_FILE_BYTES)}; nothing in it is run."
    )
    upload = st.file_uploader(
        "Usage log",
        type=["jsonl", "ndjson", "json", "csv", "txt"],
        key="pl_upload",
        max_upload_size=MAX_FILE_BYTES // MiB,
    )
    if st.button("Use the example log", key="pl_example"):
        st.session_state[EXAMPLE_STATE] = True
    if upload is not None:
        data, name = upload.getvalue(), upload.name
    elif st.session_state.get(EXAMPLE_STATE):
        data, name = EXAMPLE_LOG.read_bytes(), EXAMPLE_LOG.name
        st.caption(f"Showing the example log ({EXAMPLE_LOG.name}).")
    else:
        return
    s = ctx.scenario
    payload = (
        data,
        name,
        s.price_in / TOKENS_PER_MTOK,
        s.price_out / TOKENS_PER_MTOK,
        CACHE_WRITE_MULTIPLIER[s.ttl],
        CACHE_READ_MULTIPLIER,
    )
    report, problems = upload_job(st, "audit_usage", content_key(*payload), payload, "Auditing the usage log…")
    if report is None:
        st.error(md_list(problems))
        return
    _audit_report(st, report, s.ttl)


GROUP_HEADERS = {
    "group": "group",
    "requests": "requests",
    "cache_hit_rate": "hit rate",
    "invalidated": "writes, no reads",
    "requests_writing": "requests writing",
    "cache_read_tokens": "cache read (tokens)",
    "cache_creation_tokens": "cache writes (tokens)",
    "input_tokens": "uncached input (tokens)",
    "output_tokens": "output (tokens)",
    "paid_usd": "paid (API $)",
    "ideal_usd": "ideal (API $)",
}
GROUP_KINDS = {
    "requests": "count",
    "hit rate": "pct",
    "writes, no reads": "yes_no",
    "requests writing": "count",
    "cache read (tokens)": "count",
    "cache writes (tokens)": "count",
    "uncached input (tokens)": "count",
    "output (tokens)": "count",
    "paid (API $)": "usd",
    "ideal (API $)": "usd",
}

#: Invalidated groups named one by one; the rest are counted (every one is in the groups CSV).
GROUPS_NAMED = 5


def _invalidated_groups(st: Any, rep: AuditReport) -> None:
    """One box for the groups whose cache writes were never read: the biggest few by name, then a count."""
    bad = rep.groups[rep.groups["invalidated"]].sort_values("cache_creation_tokens", ascending=False)
    if bad.empty:
        return
    named = [
        f"group {g.group}: {fmt_count(g.requests_writing)} requests wrote {fmt_count(g.cache_creation_tokens)} tokens"
        for g in bad.head(GROUPS_NAMED).itertuples(index=False)
    ]
    more = len(bad) - len(named)
    tail = f"\n\n… and {fmt_count(more)} more groups, listed in the groups CSV below." if more > 0 else ""
    st.error(
        f"{fmt_count(len(bad))} group(s) wrote to the cache and never read from it. Something in the prefix changes "
        "between requests (a timestamp, an id, reordered tools): move it after the last breakpoint.\n\n"
        + md_list(named)
        + tail
    )


def _audit_report(st: Any, rep: AuditReport, ttl: str) -> None:
    parsed = rep.parsed
    if parsed.problems:
        shown = parsed.problems[:PROBLEMS_SHOWN]
        more = parsed.rows_rejected - len({p.line for p in shown})
        rejected, read = fmt_count(parsed.rows_rejected), fmt_count(parsed.rows_read)
        lines = md_list(str(p) for p in shown[:10])
        st.warning(f"{rejected} of {read} rows rejected; the others are used.\n\n{lines}")
        if len(shown) > 10 or more > 0:
            with st.expander(f"All problems ({rejected} rows)"):
                st.markdown(
                    md_list(str(p) for p in shown) + (f"\n\n… and {fmt_count(more)} more rows" if more > 0 else "")
                )
    if rep.requests == 0:
        st.info("No usable rows.")
        return
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Requests", fmt_count(rep.requests))
    c2.metric(
        "Measured hit rate",
        "no cached tokens" if rep.cache_hit_rate is None else fmt_pct(rep.cache_hit_rate),
        help="cache_read / (cache_read + cache_creation)",
    )
    c3.metric(
        "Paid",
        fmt_usd(rep.paid_usd),
        delta=f"{fmt_usd(rep.paid_usd - rep.nocache_usd)} vs no caching",
        delta_color="inverse",
        help=f"Scenario prices; writes at the {ttl} TTL's multiplier.",
    )
    c4.metric(
        "Ideal caching",
        fmt_usd(rep.ideal_usd),
        help="Every cacheable token read except the first write of each group (a lower bound).",
    )
    _invalidated_groups(st, rep)
    st.plotly_chart(audit_figure(rep), key="pl_audit_chart", config=PLOTLY_CONFIG)
    if rep.untimed_rows:
        st.caption(f"{fmt_count(rep.untimed_rows)} rows without a timestamp are left out of the time series.")
    shown = rep.groups[list(GROUP_COLUMNS)]
    view = shown.sort_values("cache_creation_tokens", ascending=False).rename(columns=GROUP_HEADERS)
    if len(view) > MAX_TABLE_ROWS:
        st.caption(
            f"The {fmt_count(MAX_TABLE_ROWS)} groups that wrote the most to the cache, of {fmt_count(len(view))}; "
            "every group is in the CSV."
        )
    st.dataframe(table(view, GROUP_KINDS), hide_index=True, key="pl_groups")
    st.download_button(
        "Groups CSV",
        data=frame_to_csv(present_frame(shown)),
        file_name="kvplan-usage-audit-groups.csv",
        mime="text/csv",
        key="pl_groups_csv",
        on_click="ignore",
        icon=":material/download:",
    )
