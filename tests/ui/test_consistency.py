"""The page agrees with itself (issue 18): each headline card equals the same figure in its tab, for the
same scenario, as a person reads them (AppTest, the real app)."""

from __future__ import annotations

import math

import pytest
from streamlit.testing.v1 import AppTest

from planner.engine.evaluate import evaluate
from planner.format import fmt_count, fmt_pct, fmt_seconds
from planner.links import from_query
from planner.model.scenario import Scenario
from planner.prompts.layout import DEFAULT_LAYOUT
from planner.prompts.layout_report import analyse
from planner.studies.advisor.context import Finding, Option
from tests.tab_harness import run_app as run
from tests.ui.shown import plain
from ui import headline
from ui.prompt_source import layout_source, rpm_for_hit_rate, sidebar_layout
from ui.state import PageContext
from ui.tabs import findings as findings_panel

#: Issue 18's scenario: headline TTFT 684 ms against the Chunked prefill tab's 1,040 ms.
ISSUE_LINK = {"model": "llama-3.1-70b", "tp": "4", "batch": "64", "prompt": "8192", "chunk": "512"}


def card(at: AppTest, label: str):
    return next(m for m in at.metric if plain(m.label) == label)


def test_headline_ttft_is_the_chunked_prefill_tabs(catalog):
    at = run(ISSUE_LINK, tab="Chunked prefill")
    ttft = card(at, "TTFT")
    captions = " ".join(plain(c.value) for c in at.caption)
    assert f"newcomer waits {plain(ttft.value)} " in captions  # the tab's own sentence, the same text
    s, _ = from_query(ISSUE_LINK)
    r = evaluate(s, catalog)
    assert plain(ttft.value) == fmt_seconds(r.metrics["chunked_ttft_s"])
    assert plain(ttft.value) != fmt_seconds(r.metrics["ttft_s"])  # the idle prefill is the secondary figure
    assert f"idle {fmt_seconds(r.metrics['nochunk_ttft_s'])}" in plain(ttft.proto.delta_description)


def test_a_newcomer_that_never_starts_reads_never():
    at = run({"batch": "512", "chunk": "512", "prompt": "256", "output": "16", "prefix": "0"})
    assert plain(card(at, "TTFT").value) == "never"


def test_headline_cache_saving_is_the_prompt_layout_tabs():
    # the example layout: a timestamp before the breakpoint makes caching a surcharge
    at = run({"layout": DEFAULT_LAYOUT}, tab="Prompt layout")
    head = card(at, headline.CACHE_LABEL)
    tab = [m for m in at.metric if plain(m.label) == headline.CACHE_LABEL]
    assert len(tab) == 2 and plain(tab[0].value) == plain(tab[1].value) == plain(head.value)
    assert plain(head.value).startswith("-")  # the surcharge, not the sidebar's saving
    assert "layout" in plain(head.proto.delta_description)


@pytest.mark.parametrize("query", [{}, {"rpm": "3", "hit": "0.5"}, {"prefix": "1500", "prompt": "3000"}])
def test_without_a_layout_the_tab_starts_from_the_sidebar(catalog, query):
    s, _ = from_query(query)
    r = evaluate(s, catalog)
    layout = layout_source(r).layout
    assert [b.tokens for b in layout.blocks] == [s.prefix, s.prompt - s.prefix]
    assert layout.blocks[0].breakpoint and layout.blocks[0].variability == "stable"
    rep = analyse(layout, r.inputs, s.ttl)
    if s.rpm == 0:  # the sidebar sets the hit rate: the tab's traffic reproduces it, to the card's precision
        assert fmt_pct(rep.saving_frac) == fmt_pct(r.metrics["cache_saving_frac"])
    else:  # the sidebar's requests/min, as given
        assert rep.traffic.rpm == s.rpm
    at = run(query, tab="Prompt layout")
    assert any("Starting from the sidebar's workload" in plain(c.value) for c in at.caption)
    tab_saving = [m for m in at.metric if plain(m.label) == headline.CACHE_LABEL]
    assert plain(tab_saving[1].value) == fmt_pct(rep.saving_frac)


def test_rpm_for_hit_rate_inverts_the_layout_rule():
    rpm = rpm_for_hit_rate(0.5, "5m", 10.0)
    assert 1 - math.exp(-rpm / 60 * (300 - 10.0)) == pytest.approx(0.5)
    assert rpm_for_hit_rate(0.0, "5m", 10.0) == 0.0 and rpm_for_hit_rate(0.5, "5m", 400.0) is None


def test_the_two_cost_models_are_labelled():
    at = run({})
    labels = [plain(m.label) for m in at.metric]
    assert "GPU $ / M output tokens" in labels and "API prompt-cache saving" in labels
    assert "GPU cost model" in plain(card(at, "GPU $ / M output tokens").help)
    assert "API cost model" in plain(card(at, "API prompt-cache saving").help)


def test_speculative_off_reads_off_greyed_with_the_best_gamma(catalog):
    at = run(ISSUE_LINK)
    spec = card(at, "Speculative speedup (off)")
    assert spec.value.startswith(":gray[") and plain(spec.proto.delta) == "off"
    assert spec.proto.color == 2  # MetricColor.GRAY: grey, not a green "better"
    s, _ = from_query(ISSUE_LINK)
    best = int(evaluate(s, catalog).metrics["spec_best_gamma"])
    assert f"best γ {best}" in plain(spec.proto.delta_description)
    at.button(key=headline.BEST_GAMMA_KEY).click().run()
    assert at.query_params["gamma"] == str(best)
    assert not [b for b in at.button if b.key == headline.BEST_GAMMA_KEY]  # at the best γ: no offer
    on = card(run({**ISSUE_LINK, "spec": "1"}), "Speculative speedup")
    assert not on.value.startswith(":gray[") and plain(on.proto.delta).startswith(("+", "-"))


def test_the_ridge_batch_reads_the_same_in_the_notice_and_the_chart_caption():
    at = run(
        {"model": "llama-3.1-70b", "tp": "8", "prompt": "128", "output": "16", "prefix": "0"}, "Latency & throughput"
    )
    texts = [plain(c.value) for c in at.caption]
    turn = next(t.split("from batch ")[1].split(".")[0] for t in texts if "turns compute-bound from batch" in t)
    assert sum(f"compute-bound from batch {turn}" in t for t in texts) >= 2


class Recorder:
    """Enough of streamlit for one findings option: records markdown and buttons."""

    def __init__(self):
        self.markdowns: list[str] = []
        self.buttons: list[str] = []
        self.session_state: dict = {}

    def markdown(self, text):
        self.markdowns.append(text)

    def button(self, label, key=None):
        self.buttons.append(key)
        return False


def test_an_option_that_changes_nothing_offers_no_apply(catalog):
    s = Scenario(model="llama-3.1-8b")
    ctx = PageContext(Recorder(), s, evaluate(s, catalog), catalog)
    f = Finding("kv-caps-concurrency", "high", "t", "e", "a", "p", "max_concurrent_sequences", 39.0, 39.0)
    same = Option("Use a model variant with 2 KV heads (kv_heads=2).", {"kv_heads": 2}, f.metric, 39.0)
    better = Option("Store the KV cache in fp8 (kvdtype=fp8).", {"kvdtype": "fp8"}, f.metric, 78.0)
    findings_panel._option(ctx, f, "Or:", same.action, same.changed_keys, same.after, "k1")
    findings_panel._option(ctx, f, "Or:", better.action, better.changed_keys, better.after, "k2")
    assert ctx.st.buttons == ["k2"]
    assert "changes nothing here" in plain(ctx.st.markdowns[0])


def test_tp_beyond_the_kv_heads_says_they_are_replicated(catalog):
    s = Scenario(model="llama-3.1-8b")  # 8 KV heads
    ctx = PageContext(Recorder(), s, evaluate(s, catalog), catalog)
    assert "replicated" in findings_panel.replication_note(ctx, {"tp": 16})
    assert findings_panel.replication_note(ctx, {"tp": 8}) == ""


def test_a_bad_link_value_says_what_is_used_instead():
    at = run({"batch": "-5", "custom": "not a code!"})
    text = plain(" ".join(w.value for w in at.warning))
    assert "batch='-5'" in text and "; using 32" in text
    assert "shape code" in text  # the custom hint describes a shape code, not a GPU key
    assert fmt_count(32) in text


def test_sidebar_layout_without_a_prefix_has_no_breakpoint(catalog):
    s = Scenario(prefix=0)
    layout = sidebar_layout(evaluate(s, catalog))
    assert [b.breakpoint for b in layout.blocks] == [False] and layout.blocks[0].tokens == s.prompt
