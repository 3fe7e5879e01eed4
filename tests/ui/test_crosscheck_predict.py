"""AppTest of the Cross-check tab's serving section: an uploaded vllm bench serve result beside kvplan
predict for the same settings, field by field."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from planner.model.scenario import Scenario
from planner.predict.crosscheck import crosscheck, run_settings
from tests.paths import ROOT
from tests.tab_harness import tab_page
from ui.tabs.crosscheck import SERVING

ROWS = json.loads((ROOT / "benchmarks" / "data" / "published-bench-serve.json").read_text())["rows"]
GS_VLLM = next(r for r in ROWS if r["id"] == "GS_qwen3_8b_h100_vllm_c4")
SERVER = Scenario(model="qwen3-8b", gpu="h100-sxm", batch=1024, chunk=8192)


def _upload(files: list[tuple[str, bytes]]) -> AppTest:
    at = AppTest.from_function(tab_page, args=("ui.tabs.crosscheck",), default_timeout=60)
    at.session_state["scenario"] = SERVER.model_dump_json()
    at.run()
    at.radio(key="xc_mode").set_value(SERVING).run()
    at.file_uploader(key="xc_serving_upload").set_value([(n, d, "application/json") for n, d in files]).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def test_an_uploaded_run_is_shown_beside_the_prediction_field_by_field(catalog):
    result = GS_VLLM["result"] | {"model_id": "Qwen/Qwen3-8B", "date": "20251020-101010"}
    at = _upload([("qwen3.json", json.dumps(result).encode())])
    frame = at.dataframe[0].value
    assert list(frame.columns) == ["field", "unit", "your run", "kvplan predict", "error (%)"]
    assert list(frame["field"][:3]) == ["Successful requests", "Benchmark duration", "Request throughput"]
    tpot = frame.set_index("field").loc["Mean TPOT"]
    assert tpot["your run"] == 7.38
    # the same numbers as planner.predict for the file's settings (one server, a closed loop of 4)
    _, rows = crosscheck(SERVER, catalog, run_settings(result))
    want = {r.label: r.predicted for r in rows}
    assert tpot["kvplan predict"] == want["Mean TPOT"]
    assert abs(tpot["error (%)"]) < 50
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "--max-concurrency 4" in captions and "100 prompts" in captions
    assert "Step times: measured kernels (vLLM 0.24.0, NVIDIA H100 SXM)" in captions


def test_an_sglang_file_and_a_broken_one_are_named():
    sglang = {"backend": "sglang", "mean_e2e_latency_ms": 10.0, "completed": 3}
    at = _upload([("sg.jsonl", json.dumps(sglang).encode()), ("bad.json", b"{nope")])
    shown = " ".join(m.value for m in list(at.info) + list(at.error)).replace("\\", "")
    assert "sg.jsonl: an SGLang bench_serving result" in shown
    assert "bad.json" in shown
