"""The Compare GPUs tab (issue 30): numbers through planner.format (no "95.479167"), the columns that fit at
1280 px with the rest under "Every column", a vendor filter, a tp per GPU and the tp column saying which."""

from __future__ import annotations

import re

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from planner.studies.compare import compare_gpus
from tests.tab_harness import tab_page
from ui.format import table
from ui.tabs.compare import COMPARE_DISPLAY, COMPARE_KINDS, MORE_DISPLAY, compare_display_frame

SEVENTY_B = Scenario(model="llama-3.1-70b", tp=4)
RAW_FLOAT = re.compile(r"\d\.\d{4,}")  # what the table showed: 95.479167, 4.357639 sequences


def test_every_cell_is_formatted_and_sequences_are_whole(catalog):
    frame = compare_gpus(SEVENTY_B, catalog)
    for columns in (COMPARE_DISPLAY, MORE_DISPLAY):
        text = table(compare_display_frame(frame, columns), COMPARE_KINDS).to_string()
        assert not RAW_FLOAT.search(text), RAW_FLOAT.findall(text)[:5]
        assert "None" not in text and "nan" not in text
    shown = table(compare_display_frame(frame), COMPARE_KINDS)
    cells = shown.to_string().splitlines()
    a100 = next(line for line in cells if "A100 80GB" in line)
    assert " 203 " in a100  # 203.65 sequences held: whole, as everywhere else on the page


def test_the_tp_column_says_why_and_a_gpu_holding_no_sequence_does_not_fit(catalog):
    frame = compare_gpus(SEVENTY_B, catalog).set_index("gpu")
    assert frame.loc["h200", "tp_text"] == "tp4 (yours)"
    assert frame.loc["a100-40gb-sxm", "tp_text"] == "tp8 (smallest that fits)"
    chosen = compare_gpus(SEVENTY_B, catalog, {"h100-sxm": 2, "l4": 1}).set_index("gpu")
    assert chosen.loc["h100-sxm", "tp_text"] == "tp2 (chosen)" and chosen.loc["h100-sxm", "tp_used"] == 2
    # a 70B model on one 24 GB L4 holds no sequence: marked, with no metrics, never "meets"
    assert chosen.loc["l4", "tp_text"] == "does not fit at tp1 (chosen)"
    assert chosen["ttft_s"].isna()["l4"] and chosen["tpot_s"].isna()["l4"]
    assert not chosen.loc["l4", "meets_slo"]


def app() -> AppTest:
    at = AppTest.from_function(tab_page, args=("ui.tabs.compare",), default_timeout=60)
    at.session_state["scenario"] = SEVENTY_B.model_dump_json()
    return at.run()


def test_the_tab_filters_by_vendor_and_sets_a_tp_per_gpu():
    at = app()
    assert not at.exception, [e.message for e in at.exception]
    main = at.dataframe[0].value
    assert list(main.columns) == list(COMPARE_DISPLAY.values())  # eight columns: they fit at 1280 px
    assert "AMD" in at.multiselect(key="_cmp_vendor").value
    at.multiselect(key="_cmp_vendor").set_value(["AMD"]).run()
    amd = list(at.dataframe[0].value["GPU"])
    assert amd and all("MI3" in n for n in amd)
    at.multiselect(key="_cmp_vendor").set_value(["NVIDIA", "AMD"]).run()
    at.selectbox(key="_cmp_tp_gpu").set_value("h100-sxm").run()
    at.selectbox(key="_cmp_tp_tp_h100-sxm").set_value(2).run()
    next(b for b in at.button if b.label == "Set").click().run()
    assert not at.exception, [e.message for e in at.exception]
    rows = at.dataframe[0].value.set_index("GPU")
    assert rows.loc["NVIDIA H100 SXM", "tp"] == "tp2 (chosen)"


def test_the_main_tables_columns_fit_the_page_at_1280_px():
    """The page's main column at 1280 px (the sidebar open) is about 820 px wide: the columns from TPOT on were
    cut.  Every shown column has a short label and a width, and together they fit."""
    from ui.tabs.compare import NARROW

    assert list(NARROW) == list(COMPARE_DISPLAY.values())
    assert sum(w for _, w in NARROW.values()) <= 820
