"""AppTest of the "Launch" and "Check a log" tabs (through tests/tab_harness.py, as app.py renders
them), the headline at the feasible batch, and a quantised config.json import in the sidebar."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from planner.format import fmt_pct
from planner.model.scenario import Scenario
from tests.paths import APP, ROOT
from tests.tab_harness import tab_page
from ui.tabs.log_check import cell

LOGS = ROOT / "tests" / "data" / "vllm_logs"


def app(tab: str, scenario: Scenario | None = None) -> AppTest:
    at = AppTest.from_function(tab_page, args=(tab,), default_timeout=30)
    if scenario is not None:
        at.session_state["scenario"] = scenario.model_dump_json()
    return at.run()


def plain(markdown: str) -> str:
    """Shown text without the Markdown escapes ``ui.format`` adds."""
    return markdown.replace("\\", "")


def scenario_of(at: AppTest) -> Scenario:
    return Scenario.model_validate_json(at.session_state["scenario"])


def test_launch_tab_shows_the_vllm_command_and_switches_to_sglang():
    at = app("ui.tabs.launch", Scenario(model="qwen2.5-7b", tp=2, batch=64))
    assert not at.exception
    code = at.code[0].value
    assert code.startswith("vllm serve Qwen/Qwen2.5-7B \\\n  --tensor-parallel-size 2")
    assert "--max-num-seqs 64" in code and "--max-model-len 2304" in code and at.code[0].language == "bash"
    at.radio(key="launch_engine").set_value("sglang").run()
    assert not at.exception
    assert at.code[0].value.startswith("python -m sglang.launch_server \\\n  --model-path Qwen/Qwen2.5-7B")
    assert any("vLLM's rules" in plain(i.value) for i in at.info)


def test_launch_tab_notes_a_pre_quantised_checkpoint():
    at = app("ui.tabs.launch", Scenario(wdtype="int4"))
    assert not at.exception and any("quantization_config" in plain(i.value) for i in at.info)


def test_log_tab_compares_a_pasted_log_and_applies_its_figures():
    at = app("ui.tabs.log_check")
    assert not at.exception and "Paste or upload a log" in at.info[0].value
    at.text_area(key="_log_text").set_value((LOGS / "qwen25_72b_tp2.log").read_text(encoding="utf-8")).run()
    assert not at.exception
    at2 = app("ui.tabs.log_check", Scenario(model="qwen2.5-72b"))
    at2.text_area(key="_log_text").set_value((LOGS / "qwen25_72b_tp2.log").read_text(encoding="utf-8")).run()
    assert not at2.exception
    frame = at2.dataframe[0].value.set_index("term")
    assert frame.loc["GPU KV cache size (pool)", "logged"] == "19,920"  # a 0.19 log: the pool's tokens
    assert abs(float(frame.loc["GPU KV cache size (pool)", "error"].rstrip("%"))) < 5
    # issue 30: every figure as the page writes numbers, blank (never "None") where the log is silent
    cells = frame[["predicted", "logged", "error"]].to_numpy().ravel().tolist()
    assert all(isinstance(c, str) and c != "None" and not c.startswith("-0.0") for c in cells)
    assert not any(c.endswith(".00") for c in cells)  # no "451088.00"
    blocks = frame.loc["KV blocks"]
    assert blocks["unit"] == "blocks" and "," in blocks["predicted"] and "." not in blocks["predicted"]
    assert cell(None, "GiB") == "" and cell(451_088.0, "tokens") == "451,088" and fmt_pct(-1e-5, True) == "0.0%"
    at2.button(key="log_apply").click().run()
    assert not at2.exception
    s = scenario_of(at2)
    assert (s.tp, s.mem_util, s.batch, s.chunk, s.prompt + s.output) == (2, 0.95, 1024, 8192, 8192)
    assert s.engine == "vllm@0.19"  # the log's version: its figures are 0.19's accounting
    assert (s.cal_total_gib, s.cal_weights_gib, s.cal_act_gib, s.cal_nontorch_gib, s.cal_graph_gib) == (
        79.19,
        67.8,
        2.29,
        2.09,
        1.61,
    )


def test_log_tab_names_foreign_text_and_a_tp_the_model_cannot_take():
    at = app("ui.tabs.log_check")
    at.text_area(key="_log_text").set_value("Traceback (most recent call last):\n  nothing useful here").run()
    assert not at.exception and "no vLLM start-up memory line found" in plain(at.error[0].value)
    at.text_area(key="_log_text").set_value((LOGS / "qwen3_14b_tp5_failed.log").read_text(encoding="utf-8")).run()
    assert not at.exception and "tp=5: vLLM cannot split Llama-3.1-8B over 5 GPUs" in plain(at.error[0].value)


def test_headline_shows_rates_at_the_feasible_batch():
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["batch"] = "4096"
    at.query_params["prompt"] = "16384"
    at.run()
    assert not at.exception
    tpot = next(m for m in at.metric if m.label == "TPOT")
    assert "at batch" in plain(str(tpot.proto))
    assert any("are shown at batch" in plain(w.value) for w in at.warning)
    assert any("chunk (max_num_batched_tokens) raised" in plain(i.value) for i in at.info)


def test_sidebar_import_of_a_quantised_config_sets_the_weight_layout():
    config = {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
    }
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.text_area(key="_hf_text").set_value(json.dumps(config))
    at.button(key="_hf_go").click().run()
    assert not at.exception
    assert at.session_state["wdtype"] == "int4" and at.session_state["quant"] == "awq"
    assert at.query_params["quant"] in ("awq", ["awq"]) and at.query_params["model"] in ("custom", ["custom"])
    assert any("AWQ INT4" in plain(s.value) for s in at.success)


def test_launch_tab_offers_the_fleets_bundle_and_names_why_it_cannot():
    from tests.deploy.plans import plan

    at = app("ui.tabs.launch", plan("disaggregated"))
    assert not at.exception
    shown = plain(at.markdown[-1].value)
    assert "prefill pool: 1 × tp4 (4 × NVIDIA H200 SXM), batch 256, chunk 8192" in shown
    assert "decode pool: 2 × tp2 (2 × NVIDIA H200 SXM), batch 128, chunk 4096" in shown
    assert "router vllm/vllm-router:v0.1.17, policy round_robin" in shown
    assert any("one decode-pool replica's command" in plain(i.value) for i in at.info)
    (button,) = at.get("download_button")
    assert button.proto.label == "Deployment bundle (zip)"
    at.radio(key="launch_engine").set_value("sglang").run()
    assert not at.exception and "image lmsysorg/sglang:v0.5.23" in plain(at.markdown[-1].value)
    at2 = app("ui.tabs.launch", plan("two-node-pp2"))
    at2.radio(key="deploy_target").set_value("compose").run()
    assert not at2.exception and "writes one node" in plain(at2.error[0].value) and not at2.get("download_button")
    at3 = app("ui.tabs.launch", Scenario(gpu="h100-sxm", model="llama-3.1-405b", tp=8))
    assert not at3.exception and "does not fit" in plain(at3.error[0].value)
