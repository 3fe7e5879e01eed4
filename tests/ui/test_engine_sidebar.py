"""The sidebar's engine selector: the profile in force is named, the link carries the choice and
an MFU/MBU override, and a blank override means the profile's fitted value."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from planner.model.catalog import load_catalog
from tests.paths import APP
from ui.sidebar import profile_in_force

CATALOG = load_catalog()


def test_profile_in_force_names_engine_family_and_values():
    line = profile_in_force(CATALOG, {"engine": "trtllm@0.9", "gpu": "l40s"})
    assert line.startswith("In force: TensorRT-LLM 0.9.0 profile (engine=trtllm@0.9), ada family — MFU ")
    assert "per step" in line and "per layer" in line
    calibrated = profile_in_force(CATALOG, {"engine": "vllm", "gpu": "h100-sxm", "timing": "b0.8"})
    assert calibrated.endswith("calibrated from your benchmark: timing=b0.8.")
    measured = profile_in_force(CATALOG, {"engine": "vllm", "gpu": "h100-sxm"})
    assert "on measured kernels (vllm 0.24.0 tables for this GPU)" in measured and "per step" in measured


def test_engine_selector_drives_the_link_and_the_numbers():
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    assert at.selectbox(key="engine").value == CATALOG.engine("vllm").key
    assert any(c.value.startswith("In force") and "vLLM" in c.value for c in at.caption)
    # every time figure names its basis: the page's caption under the header (docs/model.md §11)
    shown = [c.value.replace("\\", "") for c in at.caption]  # captions are Markdown-escaped
    assert "Times: measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)" in shown, shown
    assert at.number_input(key="mfu").value is None  # blank: the profile's fitted MFU
    before = {m.label: m.value for m in at.metric}
    at.selectbox(key="engine").select("trtllm@0.9").run()
    assert not at.exception
    assert at.query_params["engine"] == "trtllm@0.9"
    assert {m.label: m.value for m in at.metric} != before
    at.number_input(key="mfu").set_value(0.4).run()
    assert at.query_params["mfu"] == "0.4"
