"""kvplan dashboard: link → Scenario → widgets → engine → charts → link.

One rerun:
  1. the link (first run) or the session state fills every Scenario key;
  2. the sidebar's widgets (keyed like the link) build a validated Scenario;
  3. the URL is rewritten to that scenario (non-default values only);
  4. one cached engine call gives the headline; the panels draw, then the open tab
     (``ui.tabs.registry`` lists them all, in page order).
Everything expensive is cached by the scenario's JSON.  Run with ``make run``
(``streamlit run app.py``; ``streamlit run ui/app.py`` works too).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script (streamlit run ui/app.py): make the checkout importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pandas as pd
import streamlit as st

from planner.engine.evaluate import Result, evaluate
from planner.errors import ScenarioError
from planner.export import frame_to_csv
from planner.model.catalog import Catalog, load_catalog
from planner.model.parallel_layout import Layout
from planner.model.scenario import Scenario
from planner.model.weight_plan import resolve_weights
from planner.prompts.layout_report import LayoutReport
from planner.studies.compare import compare_gpus
from planner.studies.explain import ExplainItem, explain
from planner.studies.sweep import scenario_frame
from planner.units import MiB
from ui import headline, link_size, sidebar, timing
from ui import state as link_state
from ui.cache import BoundedCache
from ui.chart import Chart
from ui.format import failure_text, md_escape, md_list, visitor_text
from ui.prompt_source import link_layout_report
from ui.state import PageContext, PageData
from ui.tabs import registry
from ui.tabs.charts import tab_charts

LOG = logging.getLogger("kvplan.app")
TAB_KEY = "_tab"  # the tab shown, by its title (a test or a rerun names one here to open it)
SECTION_KEY = "_section"
_SHOWN_TAB = "_tab_shown"
NO_RESULT = "Nothing to show until the scenario can be evaluated (see the error above)."


@st.cache_resource(show_spinner=False)
def catalog() -> Catalog:
    return load_catalog()


#: The page's caches, keyed by the scenario's JSON, shared by every session, bounded in bytes (``ui.cache``).
RESULTS = BoundedCache("engine results", max_bytes=32 * MiB, max_entries=2048)
CHARTS = BoundedCache("charts", max_bytes=96 * MiB, max_entries=256)
COMPARE = BoundedCache("GPU comparisons", max_bytes=16 * MiB, max_entries=128)
EXPLAIN = BoundedCache("explanations", max_bytes=16 * MiB, max_entries=256)
LAYOUTS = BoundedCache("prompt-layout reports", max_bytes=8 * MiB, max_entries=256)


def evaluated(scenario_json: str) -> tuple[Result | None, tuple[str, ...]]:
    """The engine result of a scenario (shared, never mutated), or the reasons it has none."""

    def run() -> tuple[Result | None, tuple[str, ...]]:
        try:
            return evaluate(Scenario.model_validate_json(scenario_json), catalog()), ()
        except ScenarioError as exc:
            return None, tuple(exc.problems)

    return RESULTS.get_or_compute(scenario_json, run)


def scenario_csv(scenario: Scenario, cat: Catalog) -> str:
    """Inputs + every metric as one CSV row, byte-identical to ``python -m planner evaluate LINK --format csv``."""
    return frame_to_csv(scenario_frame(scenario, cat))


def charts(tab: str, scenario_json: str) -> list[Chart]:
    return CHARTS.get_or_compute((tab, scenario_json), lambda: tab_charts(tab, evaluated(scenario_json)[0]))


def compare_frame(scenario_json: str) -> pd.DataFrame:
    return COMPARE.get_or_compute(
        scenario_json, lambda: compare_gpus(Scenario.model_validate_json(scenario_json), catalog())
    )


def explain_items(scenario_json: str) -> list[ExplainItem]:
    return EXPLAIN.get_or_compute(scenario_json, lambda: explain(evaluated(scenario_json)[0]))


def layout_report(scenario_json: str) -> LayoutReport | None:
    """The report of the scenario's own prompt layout (the headline's cache card), None without one."""
    result = evaluated(scenario_json)[0]
    if result is None or not result.resolved.scenario.layout:
        return None
    return LAYOUTS.get_or_compute(scenario_json, lambda: link_layout_report(result))


def page_data(key: str) -> PageData:
    """The cached computations of the scenario whose JSON is ``key``."""
    return PageData(
        charts=lambda tab: charts(tab, key),
        compare_frame=lambda: compare_frame(key),
        explain_items=lambda: explain_items(key),
    )


def guarded(title: str, render: registry.Render, ctx: PageContext) -> None:
    """Run one tab or panel; an exception becomes an error box (its type only: the text and the
    traceback go to the server log, never to a visitor), the rest of the page still draws."""
    try:
        render(ctx)
    except Exception as exc:  # noqa: BLE001 — a broken tab must not take the page down
        LOG.exception("%s failed", title)
        st.error(f"**{md_escape(title)}** could not be drawn: {md_escape(failure_text(exc))}")


def header(scenario: Scenario, result: Result | None, cat: Catalog) -> None:
    st.title("kvplan")
    if result is not None:
        r = result.resolved
        heads = "latent KV cache" if r.model.is_mla else f"{r.model.kv_heads} KV heads"
        instance = Layout(scenario.tp, scenario.pp, scenario.ep, scenario.dp).on(r.gpu.name)
        st.caption(
            md_escape(
                f"{r.model.name} · {r.model.attention_kind}, {heads} · "
                f"{resolve_weights(r.model, r.scenario).describe()} · {instance} · {r.engine.label}"
            )
        )
        st.caption(md_escape(f"Times: {result.time_basis}"))
    row = st.container(horizontal=True, gap="small")
    with row.popover("Share link", icon=":material/link:"):
        st.code(link_state.share_link(scenario, st.context.url), language=None, wrap_lines=True)
        st.caption("Opening this link restores every input.")
    row.download_button(
        "Scenario CSV",
        data=lambda: scenario_csv(scenario, cat),  # built on click, not on every rerun
        file_name="kvplan-scenario.csv",
        mime="text/csv",
        key="csv-scenario",
        on_click="ignore",
        icon=":material/download:",
        disabled=result is None,
        help="Inputs and every metric as one row (same as `python -m planner evaluate LINK --format csv`).",
    )


def warnings(adjustments: list[str], pending_problems: list[str], cat: Catalog) -> None:
    """What the link, the widgets and the catalog could not take as given."""
    notes = link_state.link_notes(st)
    if notes:
        lines = "\n".join(f"- {md_escape(n.message)}" + ("" if n.fatal else " · notice") for n in notes)
        st.warning(f"This link had problems; the rest of it loaded:\n\n{lines}")
    size = st.session_state.get(link_size.SEEN_KEY)
    dropped = link_size.dropped_link_note(*size) if size and link_state.still_first_scenario(st) else None
    if dropped:
        st.warning(md_escape(dropped))
    for line in adjustments + [f"requested change rejected: {p}" for p in pending_problems]:
        st.warning(md_escape(line))
    if cat.problems:
        st.warning("Some profile files were skipped:\n\n" + md_list(visitor_text(p) for p in cat.problems))


def headline_row(ctx: PageContext, result: Result, key: str) -> None:
    """The eight cards, their notices, and the best-γ offer."""
    scenario = ctx.scenario
    baseline = headline.mha_baseline(scenario, result.resolved.model)
    mha = evaluated(baseline.model_dump_json())[0] if baseline is not None else None
    smaller = headline.feasible_scenario(result)
    feasible = evaluated(smaller.model_dump_json())[0] if smaller is not None else None
    items = headline.headline_items(result, mha, feasible, layout_report(key))
    headline.render(st, items, headline.notices(result))
    gamma = headline.better_gamma(result)
    if gamma is not None:
        m = result.metrics
        label = f"Use γ = {gamma}"
        note = (
            f"The engine's best γ here is {gamma} ({m['spec_best_speedup']:.2f}× against "
            f"{m['spec_speedup']:.2f}× at γ = {scenario.gamma})"
            + ("" if scenario.spec else "; speculative decoding stays off until you turn it on")
            + "."
        )
        if st.button(label, key=headline.BEST_GAMMA_KEY, help=md_escape(note), icon=":material/tune:"):
            ctx.update_scenario(gamma=gamma)


def _select_requested_tab(entries: tuple[registry.Tab, ...]) -> None:
    """A tab named in ``_tab`` (a test, a link's state, the tab a rerun was on) that the page has not shown
    yet opens: its section and, in it, the tab (``registry.section_of``)."""
    ss = st.session_state
    wanted = ss.get(TAB_KEY)
    if wanted is None or ss.get(_SHOWN_TAB) == wanted:
        return
    section = registry.section_of(str(wanted), entries)
    if section is not None:
        ss[SECTION_KEY] = section
        ss[_tab_key(section)] = wanted


def _tab_key(section: str) -> str:
    return f"{TAB_KEY}:{section}"


def tabs(ctx: PageContext) -> None:
    """The registry's sections, each with its own tabs; only the selected section's selected tab runs (lazy
    tabs); ``_tab`` names the tab shown (``_select_requested_tab`` opens another)."""
    entries = registry.TABS
    _select_requested_tab(entries)
    grouped = registry.sections(entries)
    outer = st.tabs(list(grouped), key=SECTION_KEY, on_change="rerun")
    for section_box, (section, group) in zip(outer, grouped.items(), strict=True):
        if section_box.open is False:
            continue
        with section_box:
            inner = st.tabs([t.title for t in group], key=_tab_key(section), on_change="rerun")
            for container, tab in zip(inner, group, strict=True):
                if container.open is False:
                    continue
                st.session_state[TAB_KEY] = st.session_state[_SHOWN_TAB] = tab.title
                with container:
                    if tab.needs_result and ctx.result is None:
                        st.info(NO_RESULT)
                    else:
                        guarded(tab.title, tab.render, ctx)


def main() -> None:
    """The page, timed into ``$KVPLAN_TIMING_LOG`` when the load test sets it (``ui.timing``)."""
    timing.timed(page)


def page() -> None:
    st.set_page_config(page_title="kvplan: LLM inference capacity planner", page_icon="🧮", layout="wide")
    cat = catalog()
    pending_problems = link_state.start_run(st, cat)
    with st.sidebar:
        scenario, adjustments = sidebar.render(st, cat)
        link_size.measure(st)
    link_state.finish_run(st, scenario)
    key = scenario.model_dump_json()
    result, problems = evaluated(key)
    ctx = PageContext(st, scenario, result, cat, page_data(key))

    header(scenario, result, cat)
    warnings(adjustments, pending_problems, cat)
    if result is None:
        st.error("This scenario cannot be evaluated:\n\n" + md_list(problems))
    else:
        for note in result.resolved.notes:  # defaults moved to fit what was typed, replicated KV heads
            st.info(md_escape(note))
        headline_row(ctx, result, key)

    for panel in registry.PANELS:
        guarded(panel.title, panel.render, ctx)
    tabs(ctx)


if __name__ == "__main__":
    main()
