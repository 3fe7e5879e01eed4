"""The sidebar's GPU and model pickers, grouped by vendor · generation and by family (AppTest)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from planner.engine.evaluate import CUSTOM_MODEL
from planner.model.custom_model import decode_model
from planner.model.scenario import Scenario
from tests.paths import APP
from ui import sidebar

QWEN3_NEXT = Path(__file__).parents[1] / "model" / "hf_configs" / "qwen3-next-80b-a3b-thinking.json"


def shown(elements) -> str:
    """The markdown-escaped texts of ``elements`` as a reader sees them."""
    return " ".join(e.value for e in elements).replace("\\", "")


def run_app(query: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (query or {}).items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _contiguous(groups: list[str]) -> bool:
    """Each group appears as one run (the list reads grouped)."""
    runs = [g for g, _ in itertools.groupby(groups)]
    return len(runs) == len(set(runs))


def test_pure_ordering_and_labels(catalog) -> None:
    keys = sidebar.gpu_options(catalog)
    assert sorted(keys) == sorted(catalog.profile_keys())
    groups = [catalog.profile(k).group for k in keys]
    assert _contiguous(groups)
    assert groups[0] == "NVIDIA · Ampere" and groups[-1] == "Measured"
    hopper = [k for k in keys if catalog.profile(k).group == "NVIDIA · Hopper"]
    assert set(hopper) == {"h100-pcie", "h100-sxm", "h20", "h200", "h800"}
    assert sidebar.gpu_label(catalog, "h20") == "H20 · 96 GB · Hopper"
    # issue 30: short enough not to be cut in the sidebar; the full name is in the caption under the box
    from ui.sidebar.options import MAX_GPU_LABEL_CHARS, gpu_facts

    labels = [sidebar.gpu_label(catalog, k) for k in keys]
    assert max(map(len, labels)) <= MAX_GPU_LABEL_CHARS and len(set(labels)) == len(labels)
    assert gpu_facts(catalog.profile("h100-sxm")).startswith("NVIDIA H100 SXM (NVIDIA · Hopper): ")
    models = sidebar.model_options(catalog)
    assert models[-1] == CUSTOM_MODEL and sorted(models[:-1]) == sorted(catalog.models)
    families = [catalog.models[k].family for k in models[:-1]]
    assert _contiguous(families) and families[0] == "Llama (Meta)"
    assert sidebar.model_label(catalog, "gpt-oss-120b") == "gpt-oss (OpenAI) — gpt-oss-120b"


def test_app_pickers_are_grouped(catalog) -> None:
    at = run_app()
    gpu = at.selectbox(key="gpu")
    assert gpu.options == [sidebar.gpu_label(catalog, k) for k in sidebar.gpu_options(catalog)]
    assert _contiguous([catalog.profile(k).group for k in sidebar.gpu_options(catalog)])
    model = at.selectbox(key="model")
    assert model.options == [sidebar.model_label(catalog, k) for k in sidebar.model_options(catalog)]
    assert _contiguous([label.split(" — ")[0] for label in model.options[:-1]])
    assert model.options[-1] == "Custom shape (config.json or code)"
    captions = shown(at.caption)
    assert "3.35 TB/s · 989 TFLOP/s bf16 · $2.99/GPU-h" in captions  # the default H100 SXM's key facts
    assert "32 layers (32 full) · GQA · KV 128 KiB/token (bf16)" in captions  # and Llama-3.1-8B's


def test_choosing_a_new_gpu_and_model_shows_their_facts_and_link(catalog) -> None:
    at = run_app()
    at.selectbox(key="gpu").set_value("gb200")
    at.selectbox(key="model").set_value("gpt-oss-120b")
    at.run()
    assert not at.exception
    assert at.query_params["gpu"] == "gb200" and at.query_params["model"] == "gpt-oss-120b"
    captions = shown(at.caption)
    assert "8 TB/s · 2,500 TFLOP/s bf16 · $10.5/GPU-h" in captions
    assert "36 layers (18 full + 18 sliding (128)) · GQA · KV 72.0 KiB/token (bf16)" in captions


def test_unpriced_gpu_says_so() -> None:
    at = run_app({"gpu": "h800", "model": "qwen3-8b"})
    assert "not priced" in shown(at.caption)


def test_imported_hybrid_config_shows_its_layer_kinds_and_state(catalog) -> None:
    at = run_app()
    at.text_area(key="_hf_text").set_value(QWEN3_NEXT.read_text(encoding="utf-8"))
    at.button(key="_hf_go").click().run()
    assert not at.exception and at.success
    assert "48 layers (12 full + 36 state)" in shown(at.success)
    spec = decode_model(at.query_params["custom"])
    assert (spec.state_layers, spec.state_bytes_per_layer) == (36, 1_097_728)
    captions = shown(at.caption)
    assert "+ 37.7 MiB state per sequence" in captions
    assert Scenario(model="custom", custom=at.query_params["custom"]).custom == at.query_params["custom"]


def test_not_a_decoder_is_an_error_not_a_traceback() -> None:
    at = run_app()
    at.text_area(key="_hf_text").set_value(json.dumps({"model_type": "t5", "is_encoder_decoder": True}))
    at.button(key="_hf_go").click().run()
    assert not at.exception
    assert "not a decoder-only transformer" in shown(at.error)


def test_the_draft_list_offers_only_models_smaller_than_the_target(catalog) -> None:
    """Issue 30: Llama-3.1-405B and Llama-4-Maverick were offered as drafts for a 70B target."""
    from planner.model.params import param_counts

    at = run_app({"model": "llama-3.1-70b"})
    draft = at.selectbox(key="draft")
    target = param_counts(catalog.models["llama-3.1-70b"]).total
    offered = [k for k in sidebar.model_options(catalog) if sidebar.model_label(catalog, k) in draft.options]
    assert offered and all(param_counts(catalog.models[k]).total < target for k in offered)
    assert not any("405B" in o or "Maverick" in o for o in draft.options)
    assert any("Llama-3.2-1B" in o for o in draft.options)
    assert any("Only models smaller than" in c.value for c in at.sidebar.caption)


def test_the_speedup_vs_batch_caption_says_where_the_defaults_come_from(catalog) -> None:
    from planner.engine.evaluate import evaluate
    from planner.model.scenario import Scenario
    from ui.tabs.charts import tab_charts

    r = evaluate(Scenario(model="llama-3.1-70b", tp=4, prompt=8192), catalog)
    chart = next(c for c in tab_charts("Speculative decoding", r) if c.key == "speculative-vs-batch")
    assert "EAGLE-3" in chart.caption and "arXiv:2503.01840" in chart.caption
    assert f"stops at {int(r.metrics['max_concurrent_sequences'])} sequences" in chart.caption
