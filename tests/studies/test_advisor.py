"""The advisor: each finding fires on a scenario built for it, stays silent on a
balanced one, and every predicted effect equals a direct engine evaluation of
the changed scenario.  Plus the ``findings`` CLI and the dashboard panel."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.engine.speculative import speedup
from planner.export import frame_to_csv
from planner.format import fmt_pct
from planner.links import from_query
from planner.model.scenario import Scenario
from planner.studies.advisor import (
    FRAME_COLUMNS,
    KV_ROOM_MIN_FRAC,
    SEVERITY_RANK,
    WARNING_SEVERITIES,
    Finding,
    findings,
    findings_frame,
    meets_slos,
    metric_value,
)
from planner.studies.advisor.checks.memory import next_kv_heads_down
from tests.valid_configs import valid_kw


def scenario(catalog, query: str) -> Scenario:
    s, issues = from_query(query, set(catalog.gpus), set(catalog.models))
    assert not issues, issues
    return s


def by_id(items: list[Finding]) -> dict[str, Finding]:
    ids = [f.id for f in items]
    assert len(ids) == len(set(ids)), ids
    return {f.id: f for f in items}


def apply(s: Scenario, changes) -> Scenario:
    return Scenario.model_validate({**s.model_dump(), **changes})


# Scenarios built to trigger each finding (default: Llama-3.1-8B, bf16, one H100 SXM).
TRIGGERS = {
    "weights-dont-fit": "model=llama-3.1-70b",
    "kv-caps-concurrency": "batch=512",
    "weights-leave-little-kv": "model=llama-3.1-70b&tp=2",
    "decode-regime": "batch=8",
    "chunk-imbalance": "chunk=16&slo_ttft_s=0.5",
    "spec-decoding-loses": "spec=1&alpha=0.2&gamma=8&draft_ratio=0.2",
    "cache-surcharge": "hit=0.05",
    "cache-prefix-below-minimum": "prefix=512",
    "tp-communication": "gpu=l40s&tp=8",
    "cheaper-gpu": "gpu=h100-pcie",
}
EXTRA = [
    "rpm=0.005&ttl=1h",
    "spec=1&batch=180&prompt=256&prefix=0&output=64&alpha=0.5",
    "model=deepseek-v3&gpu=mi325x&tp=8&batch=2048",
    "prompt=500&prefix=400",
    "",
    "slo_itl_s=0.03",
]


@pytest.fixture(scope="module")
def results(catalog):
    return {q: findings(scenario(catalog, q), catalog) for q in [*TRIGGERS.values(), *EXTRA]}


@pytest.mark.parametrize("fid", sorted(TRIGGERS))
def test_each_finding_fires_on_its_scenario(results, fid):
    f = by_id(results[TRIGGERS[fid]]).get(fid)
    assert f is not None, [x.id for x in results[TRIGGERS[fid]]]
    assert f.severity in WARNING_SEVERITIES
    assert f.changed_keys, "a warning proposes a change"
    assert f.explanation.endswith(".") and f.action and f.predicted_effect


def test_every_predicted_effect_is_a_direct_engine_evaluation(catalog, results):
    checked = 0
    for query, items in results.items():
        s = scenario(catalog, query)
        for f in items:
            assert metric_value(evaluate(s, catalog).metrics, f.metric) == f.before
            if not f.changed_keys:
                assert f.after == f.before
            for changes, metric, after in [(f.changed_keys, f.metric, f.after)] + [
                (o.changed_keys, o.metric, o.after) for o in f.alternatives
            ]:
                if changes:
                    direct = evaluate(apply(s, changes), catalog).metrics
                    assert metric_value(direct, metric) == after, (query, f.id, changes)
                    checked += 1
    assert checked >= 20


def test_balanced_scenario_has_no_warnings(catalog):
    # Batch at the ridge, a chunk that meets both targets, no speculation, no
    # prefix, tp = 1, and a negotiated GPU price no catalog profile beats.
    base = scenario(catalog, "gpu=mi325x&gpu_price=0.5&prompt=256&prefix=0&output=64&chunk=256")
    ridge = evaluate(base, catalog).metrics["ridge_batch"]
    assert math.isfinite(ridge)
    balanced = apply(base, {"batch": math.floor(ridge)})
    items = findings(balanced, catalog)
    assert [f.id for f in items if f.severity in WARNING_SEVERITIES] == []
    regime = by_id(items)["decode-regime"]
    assert regime.severity == "info" and f"below batch {math.ceil(ridge):,}" in regime.explanation


def test_ranked_by_severity_then_effect(results):
    for items in results.values():
        keys = [(SEVERITY_RANK[f.severity], -f.effect_magnitude) for f in items]
        assert keys == sorted(keys)


def _finite_or_never(f: Finding) -> bool:
    """Finite, or a newcomer's chunked TTFT that is infinite because the decodes fill the step budget."""
    return math.isfinite(f.after) and (math.isfinite(f.before) or f.metric == "chunked_ttft_s")


def test_numbers_are_finite_and_counts_non_negative(results):
    for items in results.values():
        for f in items:
            assert _finite_or_never(f), f
            assert "nan" not in f.explanation.lower() and "inf " not in f.explanation


def test_weights_dont_fit_proposes_the_smallest_tp(catalog, results):
    f = by_id(results[TRIGGERS["weights-dont-fit"]])["weights-dont-fit"]
    s = scenario(catalog, TRIGGERS["weights-dont-fit"])
    assert f.severity == "high" and f.before == 0 and f.after >= 1
    assert f.changed_keys == {"tp": evaluate(s, catalog).metrics["min_tp_that_fits"]}
    assert all(o.changed_keys["gpu"] != s.gpu for o in f.alternatives)
    # the checks that describe a running setup stay silent
    assert {"decode-regime", "chunk-imbalance", "cheaper-gpu"}.isdisjoint(by_id(results[TRIGGERS["weights-dont-fit"]]))


def test_kv_caps_concurrency_lists_each_remedy(results):
    f = by_id(results[TRIGGERS["kv-caps-concurrency"]])["kv-caps-concurrency"]
    assert f.severity == "high" and f.before < 512
    changes = [f.changed_keys] + [o.changed_keys for o in f.alternatives]
    assert {"kvdtype": "fp8"} in changes and {"tp": 2} in changes and {"kv_heads": 4} in changes
    assert any("prompt" in c for c in changes)
    assert "131,072-token context window is not the limit" in f.explanation
    assert f.after >= 512 or all(o.after <= f.after for o in f.alternatives)


def test_kv_caps_concurrency_skips_kv_heads_for_mla(results):
    f = by_id(results["model=deepseek-v3&gpu=mi325x&tp=8&batch=2048"])["kv-caps-concurrency"]
    assert all("kv_heads" not in c for c in [f.changed_keys] + [o.changed_keys for o in f.alternatives])


def test_next_kv_heads_down_is_a_divisor():
    assert next_kv_heads_down(32, 8) == 4
    assert next_kv_heads_down(28, 4) == 2
    assert next_kv_heads_down(40, 40) == 20
    assert next_kv_heads_down(32, 1) is None


def test_weights_leave_little_kv_reaches_the_threshold(results):
    f = by_id(results[TRIGGERS["weights-leave-little-kv"]])["weights-leave-little-kv"]
    assert f.metric == "kv_budget_frac" and f.before < KV_ROOM_MIN_FRAC <= f.after
    assert f.changed_keys == {"tp": 4}  # the smallest tp above 2 that leaves a quarter for KV


def test_decode_regime_raises_batch_within_limits(catalog, results):
    s = scenario(catalog, TRIGGERS["decode-regime"])
    f = by_id(results[TRIGGERS["decode-regime"]])["decode-regime"]
    new = evaluate(apply(s, f.changed_keys), catalog).metrics
    assert f.changed_keys["batch"] > s.batch and f.after > f.before
    assert new["batch_fits_memory"] and new["tpot_s"] <= s.slo_itl_s
    # "compute-bound" describes the whole step: at a 2k context each sequence's KV reads outweigh
    # its arithmetic, so Llama-3.1-8B's decode is memory-bound at every batch
    assert "memory-bound at every batch" in f.explanation
    # one more sequence breaks a limit
    over = evaluate(apply(s, {"batch": f.changed_keys["batch"] + 1}), catalog).metrics
    ridge = new["ridge_batch"]
    assert not over["batch_fits_memory"] or over["tpot_s"] > s.slo_itl_s or f.changed_keys["batch"] + 1 > ridge


def test_chunk_finding_on_both_sides(catalog, results):
    small = by_id(results[TRIGGERS["chunk-imbalance"]])["chunk-imbalance"]
    assert small.metric == "chunked_ttft_s" and small.changed_keys["chunk"] > 16
    assert small.after <= Scenario().slo_ttft_s < small.before  # the newcomer is admitted and meets its target
    # one 2,048-token chunk stalls decoding past a 30 ms TPOT target
    big = by_id(results["slo_itl_s=0.03"])["chunk-imbalance"]
    s = Scenario(slo_itl_s=0.03)
    assert big.metric == "chunked_max_itl_s" and big.changed_keys["chunk"] < s.chunk
    assert big.before > s.slo_itl_s >= big.after


def test_speculative_break_evens(catalog, results):
    q = "spec=1&batch=180&prompt=256&prefix=0&output=64&alpha=0.5"
    s = scenario(catalog, q)
    f = by_id(results[q])["spec-decoding-loses"]
    assert f.metric == "tpot_s" and f.after < f.before
    alt = next(o for o in f.alternatives if "batch" in o.changed_keys)
    b = alt.changed_keys["batch"]
    x = evaluate(s, catalog).inputs.as_arrays()
    su = speedup(x, batch=np.array([b, b + 1.0]))
    assert su[0] >= 1.0 > su[1] and alt.after >= 1.0
    off = by_id(results[TRIGGERS["spec-decoding-loses"]])["spec-decoding-loses"]
    assert off.changed_keys == {"spec": False} and "above α=" in off.explanation


def test_prompt_cache_findings(catalog, results):
    sur = by_id(results[TRIGGERS["cache-surcharge"]])["cache-surcharge"]
    m = evaluate(scenario(catalog, TRIGGERS["cache-surcharge"]), catalog).metrics
    assert sur.changed_keys == {"prefix": 0} and sur.after == m["nocache_cost_per_request_usd"] < sur.before
    assert f"{fmt_pct(m['cache_break_even_hit_rate'])} break-even" in sur.explanation
    ttl = by_id(results["rpm=0.005&ttl=1h"])["cache-surcharge"]
    assert "requests/min" in ttl.explanation and ttl.after < ttl.before
    low = by_id(results[TRIGGERS["cache-prefix-below-minimum"]])["cache-prefix-below-minimum"]
    assert low.changed_keys == {"prefix": 1024} and low.after < low.before
    short = by_id(results["prompt=500&prefix=400"])["cache-prefix-below-minimum"]
    assert short.severity == "info" and not short.changed_keys


def test_tp_communication(results):
    f = by_id(results[TRIGGERS["tp-communication"]])["tp-communication"]
    assert f.changed_keys == {"tp": 4} and f.after > f.before
    assert any("gpu" in o.changed_keys for o in f.alternatives)


def test_cheaper_gpu_meets_the_slos(catalog, results):
    s = scenario(catalog, TRIGGERS["cheaper-gpu"])
    f = by_id(results[TRIGGERS["cheaper-gpu"]])["cheaper-gpu"]
    new = evaluate(apply(s, f.changed_keys), catalog).metrics
    assert f.changed_keys["gpu"] != s.gpu and f.after <= 0.9 * f.before
    assert new["fits"] and new["batch_fits_memory"] and meets_slos(new, s)


def test_gpu_price_override_is_cleared_for_other_gpus(catalog):
    s = scenario(catalog, "gpu_price=50")
    f = by_id(findings(s, catalog))["cheaper-gpu"]
    assert f.changed_keys["gpu_price"] is None


def test_findings_frame_and_csv(results):
    items = results[""]
    frame = findings_frame(items)
    assert tuple(frame.columns) == FRAME_COLUMNS and list(frame["rank"]) == list(range(1, len(items) + 1))
    rows = list(csv.reader(io.StringIO(frame_to_csv(frame))))
    assert tuple(rows[0]) == FRAME_COLUMNS and len(rows) == len(items) + 1
    assert tuple(findings_frame([]).columns) == FRAME_COLUMNS


def run_cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_cli_findings_formats():
    code, out, _ = run_cli("findings", "batch=512")
    assert code == 0 and out.startswith("1. [HIGH]")
    code, out, _ = run_cli("findings", "batch=512", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data[0]["id"] == "kv-caps-concurrency" and data[0]["changed_keys"]
    code, out, _ = run_cli("findings", "https://host/app?batch=512", "--format", "csv")
    assert code == 0 and out.split("\n")[0] == ",".join(FRAME_COLUMNS)


def test_cli_findings_bad_input_exits_2():
    code, out, err = run_cli("findings", "batch=abc&gpu=nope")
    lines = err.strip().split("\n")
    assert code == 2 and out == "" and len(lines) == 2
    assert all(line.startswith("error: ") for line in lines) and "batch" in err and "gpu" in err
    assert run_cli("findings", "--format", "xml")[0] == 2


SMALL_MODELS = ["llama-3.1-8b", "qwen2.5-7b", "mixtral-8x7b", "llama-3.1-70b", "gemma-2-9b"]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    gpu=st.sampled_from(["h100-sxm", "l40s", "a100-80gb-sxm", "mi300x"]),
    model=st.sampled_from(SMALL_MODELS),
    tp=st.sampled_from([1, 2, 4]),
    batch=st.integers(1, 1024),
    prompt=st.integers(16, 32_768),
    output=st.integers(1, 2048),
    chunk=st.sampled_from([64, 512, 2048, 8192]),
    spec=st.booleans(),
    alpha=st.floats(0.0, 1.0),
    hit=st.floats(0.0, 1.0),
)
def test_property_effects_reproduce_and_rank(catalog, gpu, model, tp, batch, prompt, output, chunk, spec, alpha, hit):
    kw = valid_kw(dict(gpu=gpu, model=model, tp=tp, batch=batch, prompt=prompt, output=output, chunk=chunk), catalog)
    s = Scenario(**kw, prefix=min(1024, kw["prompt"]), spec=spec, alpha=alpha, hit=hit)
    items = findings(s, catalog)
    keys = [(SEVERITY_RANK[f.severity], -f.effect_magnitude) for f in items]
    assert keys == sorted(keys)
    for f in items:
        assert _finite_or_never(f), f
        if f.changed_keys:
            assert metric_value(evaluate(apply(s, f.changed_keys), catalog).metrics, f.metric) == f.after
        else:
            assert f.after == f.before


# ----------------------------------------------------------------------------- panel


def _panel_app(query: str, evaluable: bool = True):
    import streamlit as st

    from planner.engine.evaluate import evaluate
    from planner.links import from_query
    from planner.model.catalog import load_catalog
    from ui.state import PageContext
    from ui.tabs.findings import render

    catalog = load_catalog()
    s, _ = from_query(query, set(catalog.gpus), set(catalog.models))
    render(PageContext(st, s, evaluate(s, catalog) if evaluable else None, catalog))


def test_panel_renders_collapsed_findings_and_applies_a_change(catalog):
    from streamlit.testing.v1 import AppTest

    from ui.tabs.findings import SEVERITY_BADGE

    items = findings(scenario(catalog, "batch=512"), catalog)
    at = AppTest.from_function(_panel_app, args=("batch=512",)).run(timeout=30)
    assert not at.exception
    assert len(at.expander) == len(items)
    for exp, f in zip(at.expander, items, strict=True):
        icon, word = SEVERITY_BADGE[f.severity]
        assert exp.label.startswith(word + ":") and exp.proto.icon == icon and not exp.proto.expanded
    assert all(not md.proto.allow_html for md in at.markdown)
    assert at.get("download_button")[0].label == "Download findings (CSV)"
    top = items[0]
    at.button(key=f"findings-apply-{top.id}").click().run(timeout=30)
    assert dict(at.session_state["_pending_scenario_changes"]) == dict(top.changed_keys)


def test_panel_is_empty_when_the_scenario_cannot_be_evaluated():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_panel_app, args=("", False)).run(timeout=30)
    assert not at.exception and len(at.expander) == 0 and len(at.markdown) == 0


def test_panel_escapes_markdown_and_html():
    from ui.format import md_escape as escape

    text = escape("<img src=x onerror=alert(1)> **bold** [link](http://x) $x$")
    assert "<" not in text.replace("\\<", "") and "**" not in text and "](" not in text and "$x$" not in text


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(model="llama-3.1-70b", tp=4, batch=64),
        dict(model="deepseek-v3", gpu="h200", tp=8, wdtype="fp8", quant="fp8-block"),
        dict(model="mixtral-8x7b", tp=2, ep=2),
        dict(model="llama-3.1-405b", gpu="l4"),
    ],
)
def test_the_vectorised_gpu_switch_is_each_switched_scenario_evaluated(catalog, kw):
    """cheapest_gpu_switch reads one grid over every profile × tp; the option it picks carries the metric
    evaluate gives the switched scenario, and no profile's smallest passing tp differs from a per-profile
    search (Context.smallest_tp)."""
    from planner.studies.advisor.checks.cost import _serves
    from planner.studies.advisor.context import Context

    s = Scenario(**kw)
    ctx = Context(s, evaluate(s, catalog), catalog)
    for ok in (_serves, lambda grid, _s: grid["fits"]):
        picked = ctx.cheapest_gpu_switch(ok, "cost_per_million_output_tokens_usd", lambda _o, _r: True)
        if picked is None:
            assert all(ctx.smallest_tp(k, ok) is None for k in catalog.gpus if k != s.gpu)
            continue
        moved = s.with_changes(**picked.changed_keys)
        if s.ep > 1:
            moved = moved.with_changes(ep=moved.tp * moved.dp)
        want = evaluate(moved, catalog).metrics["cost_per_million_output_tokens_usd"]
        assert picked.after == pytest.approx(float(want), rel=1e-12)
        assert moved.tp == ctx.smallest_tp(moved.gpu, ok)
