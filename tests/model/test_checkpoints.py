"""Presets plan with their published checkpoints (planner/model/checkpoint_spec.py, weight_plan.py), per-component
formats, and the engine's allocation of them — pinned to the figures vLLM logged loading them."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.errors import ScenarioError
from planner.model.quantization import weight_bytes_of_layout, weight_layout
from planner.model.scenario import Scenario
from planner.model.weight_plan import checkpoint_format, resolve_weights
from planner.units import GiB


def _weights_gib(catalog, **link) -> float:
    return evaluate(Scenario(**link), catalog).metrics["weight_bytes_per_gpu"] / GiB


def test_gpt_oss_120b_fits_one_h100_by_default_at_its_checkpoint_size(catalog):
    """The model card: 'fit into a single 80GB GPU (like NVIDIA H100 or AMD MI300X)'; vLLM 0.11.0 logged
    'Model loading took' 64.38 GiB on one H100 (llm-d-planner docs/empirical-vllm-memory-results.md, the preset's
    weights_source).  The checkpoint's own tensors hold 60.71 GiB; vLLM's Hopper MXFP4 layout pads the hidden
    size 2,880 → 3,072 (quant_support.mxfp4_padding)."""
    m = catalog.models["gpt-oss-120b"]
    ckpt = m.checkpoint()
    assert ckpt is not None and ckpt.repo == "openai/gpt-oss-120b" and ckpt.experts == "mxfp4"
    r = evaluate(Scenario(model="gpt-oss-120b", gpu="h100-sxm"), catalog)
    assert r.metrics["fits"] and r.metrics["kv_budget_bytes_per_gpu"] > 0
    assert r.metrics["weight_bytes_per_gpu"] / GiB == pytest.approx(ckpt.weights_gib_published, rel=0.005)
    tensors = weight_bytes_of_layout(weight_layout(m, checkpoint_format(ckpt))) / GiB
    assert tensors == pytest.approx(60.71, abs=0.01)  # 114.66 B expert weights at 0.5 + 1/32 B, 1.96 B in bf16


@pytest.mark.parametrize(
    "tp, logged_gib, rel",
    [(1, 13.64, 0.015), (2, 7.01, 0.025)],  # vLLM 0.19.0 logs, llm-d-planner accuracy/results/v0.19.0 (preset source)
)
def test_gpt_oss_20b_against_vllm_019_logs(catalog, tp, logged_gib, rel):
    assert _weights_gib(catalog, model="gpt-oss-20b", tp=tp) == pytest.approx(logged_gib, rel=rel)
    assert _weights_gib(catalog, model="gpt-oss-20b", tp=1) == pytest.approx(13.47, rel=0.002)  # vLLM 0.11.0's


def test_old_mxfp4_links_keep_their_meaning(catalog):
    """``wdtype=fp4&quant=mxfp4`` (what a user had to type before) is the default checkpoint now."""
    old = evaluate(Scenario(model="gpt-oss-120b", wdtype="fp4", quant="mxfp4"), catalog).metrics
    new = evaluate(Scenario(model="gpt-oss-120b"), catalog).metrics
    assert old == new
    bf16 = evaluate(Scenario(model="gpt-oss-120b", wdtype="bf16"), catalog).metrics
    assert not bf16["fits"] and bf16["weight_bytes_per_gpu"] / GiB == pytest.approx(217.55, abs=0.01)


def test_deepseek_r1_default_is_its_fp8_block_checkpoint(catalog):
    """config.json quantization_config: fp8, e4m3, weight_block_size [128, 128], no modules_to_not_convert: every
    linear layer of the blocks FP8 with a fp32 scale per 128 × 128 block; embedding, LM head, norms, router bf16.
    The published rows of DeepSeek-V3 (SGLang, RTP-LLM) are this format; the default plans exactly as they do."""
    m = catalog.models["deepseek-r1"]
    w = resolve_weights(m, Scenario(model="deepseek-r1"))
    assert w.checkpoint is not None and w.checkpoint.repo == "deepseek-ai/DeepSeek-R1"
    assert w.label == "fp8-block" and w.fmt.is_uniform and m.mtp_layers == 1
    link = dict(model="deepseek-r1", gpu="h200", tp=8)
    assert (
        evaluate(Scenario(**link), catalog).metrics
        == evaluate(Scenario(**link, wdtype="fp8", quant="fp8-block"), catalog).metrics
    )
    layout = weight_layout(m, w.fmt)
    # hand count from the config: linear weights at 1 B + 4 B per 128 x 128 block, the two vocabulary tables bf16
    linear = layout.quantized_params
    assert linear == pytest.approx(671e9 - 2 * 129_280 * 7_168, rel=0.01)  # 671B main model (README)
    assert layout.quantized_bytes == pytest.approx(linear * (1 + 4 / 128**2), rel=1e-3)
    assert layout.embedding_stored_params == 2 * 129_280 * 7_168


def test_nvfp4_variant_keeps_the_mla_projections_in_bf16(catalog):
    m = catalog.models["deepseek-r1"]
    w = resolve_weights(m, Scenario(model="deepseek-r1", ckpt="nvfp4"))
    assert w.checkpoint is not None and w.checkpoint.repo == "nvidia/DeepSeek-R1-0528-FP4-v2"
    assert w.kvdtype == "fp8" and "q_a_proj" in w.fmt.keep_16bit and w.fmt.experts.key == "nvfp4"
    b200 = evaluate(Scenario(model="deepseek-r1", ckpt="nvfp4", gpu="b200", tp=8), catalog)
    fp8 = evaluate(Scenario(model="deepseek-r1", gpu="b200", tp=8), catalog)
    ratio = fp8.metrics["weight_bytes_per_gpu"] / b200.metrics["weight_bytes_per_gpu"]
    assert 1.6 < ratio < 1.8  # 1 B → 0.5625 B a weight, MLA projections and vocabulary tables unchanged
    assert b200.metrics["kv_bytes_per_token"] == fp8.metrics["kv_bytes_per_token"] / 2  # the FP8 KV it ships


def test_nvfp4_is_about_a_3_5x_smaller_llama_405b(catalog):
    """NVIDIA's card for nvidia/Llama-3.1-405B-Instruct-FP4: 'reducing the disk size and GPU memory requirements by
    approximately 3.5x'."""
    bf16 = evaluate(Scenario(model="llama-3.1-405b", gpu="b200", tp=8), catalog).metrics["weight_bytes_total"]
    fp4 = evaluate(Scenario(model="llama-3.1-405b", gpu="b200", tp=8, ckpt="nvfp4"), catalog).metrics
    assert bf16 / fp4["weight_bytes_total"] == pytest.approx(3.5, abs=0.1)


def test_nvfp4_on_hopper_runs_weight_only_as_vllm_does_and_says_so(catalog):
    r = evaluate(Scenario(model="deepseek-r1", ckpt="nvfp4", gpu="h200", tp=8), catalog)
    assert any("Weight-only FP4 compression will be used leveraging the Marlin kernel" in n for n in r.resolved.notes)
    b = evaluate(Scenario(model="deepseek-r1", ckpt="nvfp4", gpu="b200", tp=8), catalog)
    # the same bytes; arithmetic at the 16-bit peak on Hopper, FP4 on Blackwell
    assert r.metrics["weight_bytes_per_gpu"] == pytest.approx(b.metrics["weight_bytes_per_gpu"])
    assert r.inputs.peak_flop_per_s < catalog.gpus["h200"].peak_for("fp8")


@pytest.mark.parametrize(
    "link, words",
    [
        (dict(model="deepseek-r1", ckpt="nvfp4", gpu="mi300x", tp=8), "nvfp4 runs on: Ampere"),
        (dict(model="llama-3.1-8b", wdtype="int4", quant="w4a8", gpu="b200"), "requires compute capability of 90"),
        (dict(model="llama-3.1-8b", wdtype="int4", gpu="mi300x"), "AMD GPUs"),
        (dict(model="llama-3.1-405b", ckpt="nvfp4", gpu="h200", tp=8, engine="trtllm"), "only supported on NVIDIA"),
        (dict(model="gpt-oss-20b", ckpt="fp8"), "ckpt=fp8: gpt-oss-20b has no such checkpoint; choose one of mxfp4"),
        (dict(model="llama-3.1-8b", quant_attn="mxfp4"), "MXFP4 stores routed experts only"),
    ],
)
def test_formats_the_engine_refuses_are_named_with_what_passes(catalog, link, words):
    with pytest.raises(ScenarioError, match=words.replace("(", r"\(").replace(")", r"\)")):
        evaluate(Scenario(**link), catalog)


def test_one_component_changed_departs_from_the_checkpoint(catalog):
    m = catalog.models["qwen3-235b-a22b"]
    w = resolve_weights(m, Scenario(model="qwen3-235b-a22b", ckpt="fp8", quant_attn="none"))
    assert w.modified and w.fmt.attention.key == "none" and w.fmt.experts.key == "fp8-block"
    assert "attention bf16" in w.label and "with your component changes" in w.describe()
    base = evaluate(Scenario(model="qwen3-235b-a22b", ckpt="fp8", gpu="h200", tp=4), catalog).metrics
    more = evaluate(Scenario(model="qwen3-235b-a22b", ckpt="fp8", gpu="h200", tp=4, quant_attn="none"), catalog)
    assert more.metrics["weight_bytes_per_gpu"] > base["weight_bytes_per_gpu"]


def test_a_config_json_with_quantization_config_imports_the_way_the_preset_plans(catalog):
    """gpt-oss-120b's own config.json (tests/model/hf_configs, aiconfigurator's verbatim copy) as a custom model:
    modules_to_not_convert leaves attention, router, embedding and head in bf16 — the preset's default weights."""
    import json
    from pathlib import Path

    from planner.model.custom_model import encode_model
    from planner.model.hf_import import model_and_quantization_from_hf_config

    data = json.loads((Path(__file__).parent / "hf_configs" / "gpt-oss-120b.json").read_text())
    spec, quant = model_and_quantization_from_hf_config(data)
    assert quant is not None and quant.changes()["quant"] == "mxfp4"
    custom = Scenario(model="custom", custom=encode_model(spec), **quant.changes())
    preset = Scenario(model="gpt-oss-120b")
    assert _weights_gib(catalog, **custom.model_dump(exclude_defaults=True)) == pytest.approx(
        _weights_gib(catalog, **preset.model_dump(exclude_defaults=True)), rel=1e-9
    )


def test_modelopt_exclusions_become_per_component_keys():
    """nvidia/DeepSeek-V3.1-NVFP4's hf_quant_config.json (aiconfigurator): NVFP4, FP8 KV, the MLA q/kv projections of
    every layer, the MTP layer and lm_head excluded."""
    from planner.model.hf_import import quantization_from_config

    exclude = ["lm_head", "model.layers.61*"] + [
        f"model.layers.{i}.self_attn.{p}"
        for i in range(61)
        for p in ("q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj")
    ]
    q = quantization_from_config(
        {
            "quantization": {
                "quant_algo": "NVFP4",
                "kv_cache_quant_algo": "FP8",
                "group_size": 16,
                "exclude_modules": exclude,
            }
        }
    )
    assert q is not None
    c = q.changes()
    assert (c["quant_attn"], c["quant_mlp"], c["quant_experts"], c["kvdtype"]) == ("nvfp4", "nvfp4", "nvfp4", "fp8")
    assert c["quant_keep"] == "q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj" and not c["wdtype"]


def test_launch_serves_the_checkpoint_the_plan_follows(catalog):
    from planner.engine.evaluate import resolve
    from planner.launch.commands import launch_command

    def cmd(**link):
        return launch_command(resolve(Scenario(**link), catalog))

    gpt = cmd(model="gpt-oss-120b")
    assert gpt.argv[2] == "openai/gpt-oss-120b" and "--quantization" not in gpt.argv and "--dtype" not in gpt.argv
    ds = cmd(model="deepseek-r1", ckpt="nvfp4", gpu="b200", tp=8)
    assert ds.argv[2] == "nvidia/DeepSeek-R1-0528-FP4-v2"
    assert ds.argv[ds.argv.index("--kv-cache-dtype") + 1] == "fp8"  # the FP8 KV the checkpoint ships
    sg = launch_command(
        resolve(Scenario(model="deepseek-r1", ckpt="nvfp4", gpu="b200", tp=8), catalog), "sglang", catalog
    )
    assert "nvidia/DeepSeek-R1-0528-FP4-v2" in sg.argv and sg.argv[sg.argv.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    old = cmd(model="llama-3.1-8b", wdtype="fp8")  # quantised at load time, as before
    # spelt for the scenario's vLLM 0.33 (issue 27's [launch] fp8_quantization: 'fp8' is deprecated online)
    assert old.argv[old.argv.index("--quantization") + 1] == "fp8_per_tensor"
    old19 = cmd(model="llama-3.1-8b", wdtype="fp8", engine="vllm@0.19")
    assert old19.argv[old19.argv.index("--quantization") + 1] == "fp8"
