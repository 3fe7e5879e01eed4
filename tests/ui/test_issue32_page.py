"""Issue 32's features on the page (AppTest of app.py; the CLI, CSV/JSON and launch commands are in
tests/test_issue32_surfaces.py): a link's checkpoint and per-component formats restore their widgets and reach
the header, the headline cards and the CSV download; the speculation method and the power keys likewise; GB300
and the RTX PRO 6000 Server Edition are in the GPU list and run on their measured kernels; the Sizing search holds
power_limit_kw."""

from __future__ import annotations

import csv
import io

from streamlit.testing.v1 import AppTest

from planner.engine.evaluate import evaluate
from planner.export import frame_to_csv
from planner.links import to_query
from planner.model.scenario import Scenario
from planner.model.weight_plan import resolve_weights
from planner.studies.sweep import scenario_frame
from tests.tab_harness import run_app, tab_page
from tests.ui.shown import page_link, plain, shown_metrics
from tests.ui.test_app import expected_metrics
from ui import sidebar

FORMATS = Scenario(
    model="deepseek-r1",
    ckpt="nvfp4",
    gpu="b200",
    tp=8,
    quant_keep="q_a_proj",
    kvdtype="fp8",
    attn_dtype="fp8",
)


def link_of(at: AppTest) -> dict[str, str]:
    return {k: at.query_params[k] for k in at.query_params}


def captions(at: AppTest) -> str:
    return " ".join(plain(c.value) for c in at.caption)


def test_a_checkpoint_link_restores_its_widgets_and_reaches_the_header_and_the_cards(catalog):
    at = run_app(to_query(FORMATS))
    assert not at.warning, [w.value for w in at.warning]
    assert at.selectbox(key="ckpt").value == "nvfp4"
    assert (at.selectbox(key="kvdtype").value, at.selectbox(key="attn_dtype").value) == ("fp8", "fp8")
    assert at.multiselect(key="_quant_keep").value == ["q_a_proj"]
    assert link_of(at) == page_link(FORMATS, catalog)
    r = evaluate(FORMATS, catalog)
    describe = resolve_weights(r.resolved.model, r.resolved.scenario).describe()
    assert "nvidia/DeepSeek-R1-0528-FP4-v2" in describe and "with your component changes" in describe
    assert describe in captions(at)  # the header's caption and the weights section's
    assert shown_metrics(at) == expected_metrics(FORMATS, catalog)  # every headline card the planner's


def test_the_checkpoint_and_component_widgets_drive_the_link(catalog):
    at = run_app({"model": "qwen3-235b-a22b", "gpu": "h200", "tp": "4"})
    ckpts = at.selectbox(key="ckpt").options
    assert len(ckpts) >= 2  # the published default and at least one other checkpoint
    at.selectbox(key="ckpt").set_value("fp8")
    at.selectbox(key="quant_attn").set_value("none")
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    link = link_of(at)
    assert (link.get("ckpt"), link.get("quant_attn")) == ("fp8", "none")
    want = Scenario(model="qwen3-235b-a22b", gpu="h200", tp=4, ckpt="fp8", quant_attn="none")
    assert resolve_weights(catalog.models["qwen3-235b-a22b"], want).describe() in captions(at)


def test_the_speculation_method_and_the_power_keys_round_trip(catalog):
    s = Scenario(
        model="deepseek-r1",
        gpu="h200",
        tp=8,
        spec=True,
        spec_method="mtp",
        gamma=1,
        power_limit_kw=50.0,
        pue=1.3,
        electricity_usd_per_kwh=0.12,
    )
    at = run_app(to_query(s))
    assert not at.warning, [w.value for w in at.warning]
    assert at.selectbox(key="spec_method").value == "mtp" and at.toggle(key="spec").value
    assert link_of(at) == page_link(s, catalog)
    m = evaluate(s, catalog).metrics
    power = next(c for c in at.metric if plain(c.label) == "Power per GPU")
    assert plain(power.value) == f"{round(float(m['power_per_gpu_w'])):,} W"
    assert "Within power_limit_kw = 50" in plain(power.help) and "PUE 1.3" in plain(power.help)
    assert "at $0.120/kWh" in plain(power.help)


def test_the_new_gpus_are_listed_and_run_on_their_measured_kernels(catalog):
    at = run_app({"gpu": "rtx-pro-6000-blackwell-server", "model": "llama-3.1-8b"})
    options = at.selectbox(key="gpu").options
    labels = {sidebar.gpu_label(catalog, k) for k in ("gb300", "rtx-pro-6000-blackwell-server")}
    assert labels <= set(options)  # AppTest lists the formatted labels
    assert sidebar.gpu_label(catalog, "rtx-pro-6000-blackwell-server") == "RTX PRO 6000 Server Edition"
    assert "Times: measured kernels (vLLM 0.24.0, NVIDIA RTX PRO 6000 Blackwell Server Edition)" in captions(at)
    at.selectbox(key="gpu").set_value("gb300").run()
    assert not at.exception and "Times: measured kernels (vLLM 0.24.0, NVIDIA GB300" in captions(at)


def test_the_page_csv_carries_the_formats_and_the_power(catalog):
    """The page's CSV download is ``scenario_frame`` (app.py): the formats column and the power metrics."""
    s = FORMATS.with_changes(power_limit_kw=50.0)
    rows = list(csv.DictReader(io.StringIO(frame_to_csv(scenario_frame(s, catalog)))))
    assert rows[0]["ckpt"] == "nvfp4" and "nvidia/DeepSeek-R1-0528-FP4-v2" in rows[0]["weight_formats"]
    assert float(rows[0]["power_limit_kw"]) == 50.0 and float(rows[0]["power_per_gpu_w"]) > 0


def _sizing(limit_kw: float):
    small = Scenario(model="llama-3.2-1b", rate=20.0, sim_requests=200, gpu="l4", power_limit_kw=limit_kw)
    at = AppTest.from_function(tab_page, args=("ui.tabs.simulate",), default_timeout=180)
    at.session_state["scenario"] = small.model_dump_json()
    at.run()
    next(b for b in at.button if b.label == "Size the fleet").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return at.success[0].value, at.dataframe[0].value


def test_sizing_shows_the_fleets_power_and_holds_the_limit():
    """Simulate & size: the table shows each fleet's board power per GPU and IT kW; with power_limit_kw = 0.5 every
    fleet shown stays within it and the answer moves off the cheapest unlimited one (over 0.5 kW)."""
    free_answer, free = _sizing(0.0)
    assert {"W per GPU", "fleet IT kW"} <= set(free.columns)
    assert float(free["fleet IT kW"].iloc[0]) > 0.5
    held_answer, held = _sizing(0.5)
    kw = held["fleet IT kW"].astype(float)
    # every fleet shown stays within the limit; a row without a fleet is one the search's bound showed unable
    # to win (one replica costs more than the answer: no run, no fleet, no power — issue 28's two rounds)
    assert kw.notna().any() and (kw.dropna() <= 0.5).all()
    assert held.loc[kw.isna(), "status"].str.startswith("cannot win").all()
    assert held["GPU"].iloc[0] != free["GPU"].iloc[0] and held_answer != free_answer
