"""Dashboard figures (ui.figures.core, built per tab by ui.tabs.charts): every tab builds for
every GPU × model preset, frames are finite, hovers carry units, the marks the issue asks for
are drawn, and every number in a caption or a mark reads as ``planner.format`` writes it."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from planner.engine.evaluate import evaluate
from planner.format import fmt_bytes, fmt_num, fmt_seconds, fmt_usd
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from planner.studies.advisor import findings
from planner.studies.ridge import fmt_turn
from ui import headline
from ui.chart import Chart
from ui.figures import core as figures
from ui.figures.theme import COLORS
from ui.tabs import registry
from ui.tabs.charts import CHART_TABS, TABS, tab_charts

CATALOG = load_catalog()
UNIT = re.compile(r"ms|GiB|KiB|TFLOP/s|FLOP/byte|tokens|sequences|×|\$|hit rate|batch|γ")
SLUG = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


def all_charts(result) -> list[Chart]:
    return [c for tab in TABS for c in tab_charts(tab, result)]


def assert_finite(frame: pd.DataFrame, where: str):
    assert len(frame) > 0, where
    for col in frame.columns:
        values = frame[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            arr = values.to_numpy(dtype=float)
            assert np.isfinite(arr).all(), f"{where}: {col} has NaN/inf"
        else:
            assert not values.isna().any(), f"{where}: {col} has missing cells"


#: The GPUs every model is drawn on (a large, a small that many models do not fit, another vendor's) and
#: the models every GPU draws (dense, GQA with windows, MoE with MLA, a hybrid attention MoE).
FIGURE_GPUS = ("h100-sxm", "l4", "mi300x")
FIGURE_MODELS = ("llama-3.1-8b", "gemma-2-27b", "deepseek-v3", "llama-4-scout-17b-16e")


def test_every_tab_for_every_gpu_and_model_preset(monkeypatch):
    """Every model preset on ``FIGURE_GPUS`` and every GPU profile with ``FIGURE_MODELS``, at tp=1 (many
    presets do not fit: that path must draw too) — each profile and preset in every chart, without the
    whole cross product (620 pairs: the suite's time budget).

    Plotly deep-copies the global default template into every figure; the dashboard
    runs under Streamlit's small one, so this loop uses none rather than plotly's large
    default (same figure code, a third less time)."""
    monkeypatch.setattr(pio.templates, "default", "none")
    pairs = {(g, m) for g in FIGURE_GPUS for m in CATALOG.models} | {
        (g, m) for g in CATALOG.gpus for m in FIGURE_MODELS
    }
    for gpu, model in sorted(pairs):
        r = evaluate(Scenario(gpu=gpu, model=model), CATALOG)
        for c in all_charts(r):
            where = f"{gpu}/{model}/{c.key}"
            assert isinstance(c.figure, go.Figure), where
            assert c.caption and not re.search(r"nan|inf|\de[+-]\d", c.caption.lower()), where
            assert_finite(c.frame, where)


SPECIAL = [
    dict(model="deepseek-v3", gpu="h200", tp=8, spec=True, draft="llama-3.2-1b", alpha=0.3),
    dict(model="gemma-2-9b", tp=2, chunk=256, rpm=3.0, ttl="1h", prefix=2000),
    dict(model="mixtral-8x7b", gpu="mi300x", wdtype="fp8", kvdtype="fp8", batch=4096, prompt=16, prefix=0, output=1),
    dict(
        model="llama-3.1-8b",
        prompt=1,
        output=1,
        prefix=0,
        chunk=16,
        batch=1,
        price_in=0.0,
        price_out=0.0,
        gpu_price=0.0,
    ),
    dict(model="llama-3.1-405b", gpu="l4", tp=64, prompt=100_000, prefix=500),
]


@pytest.mark.parametrize("kw", SPECIAL, ids=[k["model"] for k in SPECIAL])
def test_edge_scenarios_build_and_stay_finite(kw):
    r = evaluate(Scenario(**kw), CATALOG)
    charts_ = all_charts(r)
    keys = [c.key for c in charts_]
    assert len(keys) == len(set(keys)) and all(SLUG.match(k) for k in keys)
    for c in charts_:
        assert_finite(c.frame, c.key)
        go.Figure(c.figure.to_dict())  # round-trips through plotly's validation


def test_tabs_and_chart_list():
    r = evaluate(Scenario(), CATALOG)
    assert TABS == ("Memory", "Latency & throughput", "Chunked prefill", "Speculative decoding", "Prompt caching")
    assert [len(tab_charts(t, r)) for t in TABS] == [3, 4, 1, 2, 3]
    with pytest.raises(ValueError, match="unknown tab"):
        tab_charts("Compare GPUs", r)


def test_hover_shows_units_and_log_axes_where_the_issue_says():
    r = evaluate(Scenario(), CATALOG)
    by_key = {c.key: c for c in all_charts(r)}
    for c in by_key.values():
        for trace in c.figure.data:
            template = trace.hovertemplate
            if template is not None:
                assert UNIT.search(template), f"{c.key}: {template}"
    log_x = [
        "concurrency-vs-context",
        "roofline",
        "decode-vs-batch",
        "ttft-vs-prompt",
        "chunked-prefill",
        "speculative-vs-batch",
    ]
    for key in log_x:
        assert by_key[key].figure.layout.xaxis.type == "log", key
    assert by_key["roofline"].figure.layout.yaxis.type == "log"
    assert by_key["concurrency-vs-context"].figure.layout.yaxis.type == "log"


def _annotations(chart: Chart) -> str:
    return " | ".join(a.text for a in chart.figure.layout.annotations)


def test_marks_window_ridge_and_break_even():
    r = evaluate(Scenario(model="llama-3.1-70b", gpu="h100-sxm", tp=8, prompt=128, output=16, prefix=0), CATALOG)
    by_key = {c.key: c for c in all_charts(r)}
    assert "advertised window 131,072" in _annotations(by_key["concurrency-vs-context"])
    ridge = r.metrics["ridge_batch"]
    assert math.isfinite(ridge)
    assert f"compute-bound from batch {fmt_turn(ridge)}" in _annotations(by_key["decode-vs-batch"])
    shapes = by_key["decode-vs-batch"].figure.layout.shapes
    assert any(s.type == "line" and s.x0 == pytest.approx(ridge) for s in shapes)
    notes = _annotations(by_key["prompt-cache-cost"])
    assert "5m break-even 0.217" in notes and "1h break-even 0.526" in notes


def test_ridge_never_is_said_not_drawn():
    # The matmul part never turns compute-bound when one token's activations stream slower
    # than its FLOPs run (per-operator roofline; MBU 0.01 at MFU 1 does it).
    r = evaluate(Scenario(mfu=1.0, mbu=0.01), CATALOG)
    assert math.isinf(r.metrics["ridge_batch"])
    c = next(c for c in tab_charts("Latency & throughput", r) if c.key == "decode-vs-batch")
    assert "memory-bound at every batch" in c.caption and "compute-bound from" not in _annotations(c)


def test_speculative_losses_are_visible():
    r = evaluate(Scenario(model="mixtral-8x7b", tp=2, spec=True, alpha=0.3), CATALOG)
    heat, vs_batch = tab_charts("Speculative decoding", r)
    assert heat.frame["loses"].any()
    scale = heat.figure.data[0].colorscale
    assert scale[0][1] != scale[-1][1]  # a red end and a green end
    assert any(t.type == "contour" for t in heat.figure.data)  # the speedup = 1 line
    points = vs_batch.figure.data[0]
    red = COLORS["lose"]
    assert [c == red for c in points.marker.color] == vs_batch.frame["loses"].tolist()
    assert any(s.type == "rect" and s.y1 == 1.0 for s in vs_batch.figure.layout.shapes)


def test_speedup_colorscale_switches_at_one():
    scale = figures.speedup_colorscale(0.5, 2.5)
    assert scale[1][0] == scale[2][0] == pytest.approx(0.25)
    assert figures.speedup_colorscale(1.2, 3.0)[0][1] != figures.speedup_colorscale(0.2, 0.9)[0][1]


def test_prefix_below_minimum_warns_and_drops_break_even_marks():
    r = evaluate(Scenario(prompt=4096, prefix=500), CATALOG)
    gpus, cost, be = tab_charts("Prompt caching", r)
    # the two worlds, labelled: the GPUs' own prefix cache, and the API's bill
    assert gpus.title.startswith("Your GPUs (vLLM/SGLang prefix cache)")
    assert cost.title.startswith("API billing (write 1.25×/2×, read 0.1×)") and be.title.startswith("API billing")
    assert cost.caption.startswith("Warning: the 500-token prefix is below the model's 1,024-token minimum")
    assert cost.frame["below_minimum"].all()
    assert "break-even" not in _annotations(cost)


def test_memory_figure_units_are_gib():
    r = evaluate(Scenario(), CATALOG)
    mem = tab_charts("Memory", r)[0]
    weights = next(t for t in mem.figure.data if t.name == "weights")
    assert weights.x[0] == pytest.approx(r.metrics["weight_bytes_per_gpu"] / 2**30)
    assert "GiB" in weights.hovertemplate


def test_formatting_helpers():
    """The figures' own formatters are gone: captions and marks use planner.format."""
    assert fmt_num(131072) == "131,072"
    assert fmt_num(0.012345) == "0.0123"
    assert fmt_num(float("inf")) == "never"
    assert fmt_seconds(0.0643) == "64.3 ms" and fmt_seconds(12.3456) == "12.3 s"
    assert fmt_bytes(2**31) == "2.00 GiB"
    assert fmt_usd(14976.0) == "$14,976.00" and fmt_usd(0.0166) == "$0.0166"
    assert figures.fmt_num is fmt_num and headline.fmt_bytes is fmt_bytes


def test_one_rounding_rule_for_the_ridge_batch():
    """The compute-bound turn reads the same in the chart's mark, its caption, the headline's notice and the
    advisor's finding: the first whole batch at or past the ridge, ⌈ridge⌉ (issue 18: 219 / 218 / 218)."""
    s = Scenario(model="llama-3.1-70b", gpu="h100-sxm", tp=8, prompt=128, output=16, prefix=0)
    r = evaluate(s, CATALOG)
    ridge = r.metrics["ridge_batch"]
    turn = fmt_turn(ridge)
    assert turn == f"{math.ceil(ridge):,}" and not float(ridge).is_integer()
    dec = next(c for c in tab_charts("Latency & throughput", r) if c.key == "decode-vs-batch")
    assert f"from batch {turn}" in _annotations(dec) and f"from batch {turn}," in dec.caption
    assert any(f"from batch {turn}." in n.text for n in headline.notices(r))
    regime = next(f for f in findings(s, CATALOG) if f.id == "decode-regime")
    assert f"below batch {turn} and compute-bound from {turn} on" in regime.explanation


def test_captions_carry_headline_numbers_as_the_headline_writes_them():
    r = evaluate(Scenario(), CATALOG)
    by_key = {c.key: c for c in all_charts(r)}
    shown = {h.label: h.value for h in headline.headline_items(r, None)}
    assert shown["KV cache per token"] in by_key["kv-per-token-by-attention"].caption
    assert shown["TTFT"] in by_key["ttft-vs-prompt"].caption
    assert fmt_usd(r.metrics["cache_cost_per_request_usd"]) in by_key["prompt-cache-cost"].caption


def test_the_registry_lists_every_chart_tab_in_order():
    titles = [t.title for t in registry.TABS]
    assert titles[: len(TABS)] == list(CHART_TABS) and len(set(titles)) == len(titles)
    assert all(t.needs_result for t in registry.TABS[: len(TABS)])


def test_frontier_hover_labels_are_each_rows_escaped_configuration():
    from ui.figures.frontier import point_labels
    from ui.format import plot_text

    frame = pd.DataFrame(
        dict(
            gpu=pd.Categorical(["h100-sxm", "<b>x</b>", "gpu%{y}", "h100-sxm"]),
            mode=["colocated", "disaggregated", "colocated", "disaggregated"],
            layout=["tp8", "tp2·pp4", "tp1%", "{tp4}"],
            nodes=[1, 2, 1, 3],
            batch=[512, 64, 8, 1024],
            chunk=[512.0, 2048.0, 256.0, 8192.0],
            kvdtype=["bf16", "fp8", "bf16", "fp8"],
            wdtype=["bf16", "bf16", "fp8", "fp8"],
            spec=[False, True, False, True],
            gpus=[112.0, 16.0, 3.0, 48.0],
        )
    )

    def one(r) -> str:  # the label written out for one row, then escaped whole
        mode = "disaggregated, " if r.mode == "disaggregated" else ""
        nodes = f" on {r.nodes} nodes" if r.nodes > 1 else ""
        extra = (", KV fp8" if r.kvdtype == "fp8" else "") + (", fp8 weights" if r.wdtype == "fp8" else "")
        extra += ", speculative" if r.spec else ""
        return plot_text(
            f"{r.gpu}: {mode}{r.layout}{nodes}, batch {r.batch}, chunk {int(r.chunk)}{extra}; {int(r.gpus)} GPUs"
        )

    labels = point_labels(frame)
    assert list(labels) == [one(r) for r in frame.itertuples()]
    assert "<b>" not in labels[1] and "%{" not in labels[2]  # escaped, hover fields broken


def test_log_axis_ticks_are_labelled_numbers_never_bare_minor_digits():
    """Issue 30: log axes read "10 2 5 100 2 5 1000 2" (plotly's D2 ticks), the last "2" being 2,000 ms."""
    from ui.figures.theme import log_ticks

    short = log_ticks([12.0, 2_500.0])  # about two decades: 1, 2, 5 × 10^k, each written whole
    assert short["ticktext"] == ["10", "20", "50", "100", "200", "500", "1,000", "2,000", "5,000"]
    long = log_ticks([0.5, 40_000.0])  # over three decades: decades only
    assert long["ticktext"] == ["0.1", "1", "10", "100", "1,000", "10,000", "100,000"]
    narrow = log_ticks([21.5, 22.4])  # inside one decade: still labelled ticks, not a single one
    assert len(narrow["tickvals"]) >= 3 and "dtick" not in narrow


def test_the_frontier_has_no_title_in_the_figure_and_twelve_gpus_read_apart(catalog):
    from planner.search.frontiers import FRONTIERS
    from planner.search.knob_search import screen_points
    from planner.sim.slo import Slo
    from ui.figures.frontier import frontier_figure
    from ui.figures.theme import COLORS

    s = Scenario(model="llama-3.2-1b", rate=20.0, gpu="l4")
    z = screen_points(s, catalog)
    fig = frontier_figure(z.points, FRONTIERS[0], Slo.of(s))
    assert not (fig.layout.title and fig.layout.title.text)  # the tab writes it, clear of the toolbar
    gpus = [t for t in fig.data if t.type == "scattergl"]
    assert len(gpus) >= 6
    styles = {(t.marker.color, t.marker.symbol) for t in gpus}
    assert len(styles) == len(gpus) and len({t.marker.color for t in gpus}) == len(gpus)
    line = next(t for t in fig.data if t.name == "frontier")
    assert line.line.color == COLORS["ink"]
    for ax in (fig.layout.xaxis, fig.layout.yaxis):
        assert ax.type == "log" and len(ax.tickvals) >= 3
        assert [float(t.replace(",", "")) for t in ax.ticktext] == pytest.approx(list(ax.tickvals))


def _luminance(color: str) -> float:
    rgb = [int(color.lstrip("#")[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def test_the_ink_colour_reads_on_light_and_dark_pages():
    """The roofline's and the frontier's line was black, lost on streamlit's dark page (#0E1117)."""
    from ui.figures.theme import COLORS

    ink = _luminance(COLORS["ink"])
    for page in ("#FFFFFF", "#0E1117"):
        bg = _luminance(page)
        assert (max(ink, bg) + 0.05) / (min(ink, bg) + 0.05) >= 3.0, page


def test_the_cause_of_flat_concurrency_is_beside_it_when_kv_heads_are_below_tp(catalog):
    """Issue 30: below 4 KV heads at tp=4 concurrency stops rising (vLLM replicates KV heads); the reason was only
    deep in Explain.  Now on the concurrency chart, the KV chart and the card's help."""
    from ui.headline import headline_items

    r = evaluate(Scenario(model="llama-3.1-70b", tp=16, gpu="l4"), catalog)  # 8 KV heads over 16 GPUs
    by_key = {c.key: c for c in tab_charts("Memory", r)}
    assert "vLLM replicates them" in by_key["concurrency-vs-context"].caption
    assert "below 16 KV heads vLLM replicates them" in by_key["kv-per-token-by-attention"].caption
    card = next(h for h in headline_items(r, None) if h.label == "Max concurrency")
    assert "vLLM replicates them" in card.help and "concurrency stops rising" in card.help
    plain = evaluate(Scenario(model="llama-3.1-70b", tp=4), catalog)  # 8 heads over 4: nothing replicated
    assert "replicates" not in {c.key: c for c in tab_charts("Memory", plain)}["concurrency-vs-context"].caption


def test_a_second_y_axis_picks_its_own_round_ticks():
    """Issue 30: the KV-used axis beside the queue read 23.7, 47.5, 71.3 (ticks synced to the first axis)."""
    from ui.figures.theme import axis

    second = axis("KV cache used (%)", overlaying="y", side="right", range=[0, 100])
    assert second["tickmode"] == "auto" and second["showgrid"] is False
    assert "tickmode" not in axis("waiting requests")
