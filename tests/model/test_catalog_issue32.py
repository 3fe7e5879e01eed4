"""The catalog additions of issue 32: GB300, the GPUs' power fields, Llama-3.3-70B, Qwen3-Next-80B-A3B, and every
preset naming its published checkpoint(s).  Each pin is the figure the profile's or preset's source cites."""

from __future__ import annotations

import pytest

from planner.engine.evaluate import evaluate
from planner.model.catalog import load_gpus
from planner.model.params import param_counts
from planner.model.scenario import Scenario
from planner.units import GB, TERA, GiB

GPUS, PROBLEMS = load_gpus()


def test_gb300_per_gpu_datasheet_values():
    """NVIDIA aiconfigurator gb300.yaml and Verda's Blackwell Ultra table (dense): 288 GB, 8 TB/s, BF16 2.5 PF,
    FP8 5 PF, FP4 15 PF, INT8 0.165 POPS, 1.4 kW, SM103; NVL72: 72 GPUs on one NVLink 5 domain."""
    g = GPUS["gb300"]
    assert PROBLEMS == []
    assert g.memory_bytes == 288 * GB and g.memory_bandwidth_bytes_per_s == 8.0 * TERA
    peaks = {k: v / TERA for k, v in g.peak_flop_per_s.items()}
    assert peaks == {"bf16": 2500.0, "fp8": 5000.0, "int8": 165.0, "fp4": 15000.0}
    assert (g.tdp_w, g.arch, g.gpus_per_node, g.interconnect_bytes_per_s / GB) == (1400.0, "sm_103", 72, 900.0)
    # the rack-planning example: 7.5 kW per 4-GPU compute tray
    assert g.server_power_w_per_gpu == 7500 / 4


def test_rtx_pro_6000_server_edition_datasheet_values():
    """NVIDIA's Server Edition datasheet (Dec 2025) and product page: 96 GB GDDR7, 1597 GB/s, PCIe Gen5 x16 without
    NVLink, up to 600 W; dense BF16 derived from the whitepaper's Workstation 503.8 x the FP32 peaks 120 / 125, the
    low-precision ratios aiconfigurator's rtx_pro_6000_server.yaml uses (2x, 2x, 4x); sm_120; AWS g7e: 8 GPUs and
    1600 Gb/s EFA per instance."""
    g, ws = GPUS["rtx-pro-6000-blackwell-server"], GPUS["rtx-pro-6000-blackwell"]
    assert g.memory_bytes == 96 * GB and g.memory_bandwidth_bytes_per_s == 1.597 * TERA
    peaks = {k: v / TERA for k, v in g.peak_flop_per_s.items()}
    assert peaks == pytest.approx({"bf16": 483.6, "fp8": 967.2, "int8": 967.2, "fp4": 1934.4})
    assert peaks["bf16"] == pytest.approx(ws.peak_flop_per_s["bf16"] / TERA * 120 / 125, abs=0.05)
    assert (g.tdp_w, g.arch, g.compute_capability, g.gpus_per_node) == (600.0, "sm_120", "12.0", 8)
    assert g.interconnect_bytes_per_s == 64 * GB and g.scale_out_bytes_per_s == 1600e9 / 8 / 8
    assert g.memory_smi_bytes == ws.memory_smi_bytes == 97887 * 2**20  # one GB202 board, one nvidia-smi total
    assert g.memory_bandwidth_bytes_per_s < ws.memory_bandwidth_bytes_per_s  # the Server's slower GDDR7 clock


@pytest.mark.parametrize(
    ("gpu", "device"),
    [("gb300", "NVIDIA GB300"), ("rtx-pro-6000-blackwell-server", "NVIDIA RTX PRO 6000 Blackwell Server Edition")],
)
def test_gb300_and_the_server_edition_run_on_their_measured_kernels(gpu, device, catalog):
    """aiconfigurator-core 0.12.0 measured both (systems/data/gb300, systems/data/rtx_pro_6000_server): every engine
    at its query slot and the nccl-tests table of the system's yaml (gb300 2.27, rtx_pro_6000_server 2.29.2), the
    device as the driver named it."""
    from planner.kernels.format import read_header
    from tests.paths import ROOT

    folder = ROOT / "planner" / "data" / "kernel_tables" / gpu
    nccl = {"gb300": "2.27", "rtx-pro-6000-blackwell-server": "2.29.2"}[gpu]
    names = {p.name for p in folder.glob("*.npz")}
    assert names == {"sglang-0.5.14.npz", "trtllm-1.3.0rc20.npz", "vllm-0.24.0.npz", f"nccl-{nccl}.npz"}
    for path in folder.glob("*.npz"):
        meta = read_header(path, path.read_bytes())
        assert meta.gpu == gpu and meta.device_name == device, path
    for engine, release in (("vllm@0.33", "vLLM 0.24.0"), ("sglang@0.5.23", "SGLang 0.5.14")):
        r = evaluate(Scenario(model="llama-3.1-8b", gpu=gpu, engine=engine), catalog)
        assert r.time_basis.startswith(f"measured kernels ({release}, {GPUS[gpu].name}"), r.time_basis


def test_b300_keeps_its_1100_w_and_names_the_conflict():
    """aiconfigurator b300_sxm.yaml and Verda: 1,100 W; the DGX B300 power-capping doc says 1,000 W maximum TGP."""
    g = GPUS["b300"]
    assert g.tdp_w == 1100.0 and "1000" in g.power_source.replace(",", "")


# profile: (TDP W, idle W or None, server W per GPU or None) — the values each profile's *_source quotes
POWER_PINS = {
    "h100-sxm": (700.0, 75.0, 10_200 / 8),  # NVIDIA; Splitwise constant.yaml idle 75; DGX H100 10.2 kW
    "a100-80gb-sxm": (400.0, 63.0, 6_500 / 8),  # NVIDIA; Splitwise idle 63; DGX A100 6.5 kW
    "a100-40gb-sxm": (400.0, None, None),
    "h200": (700.0, None, None),
    "b200": (1000.0, None, None),  # maximum TGP (DGX B200 default set point 700 W)
    "gb200": (1200.0, None, None),
    "h100-pcie": (350.0, None, None),
    "l4": (72.0, None, None),
    "l40s": (350.0, None, None),
    "mi300x": (750.0, None, None),
    "mi325x": (1000.0, None, None),
    "mi355x": (1400.0, None, None),
    "rtx-pro-6000-blackwell": (600.0, None, None),
    "rtx-pro-6000-blackwell-server": (600.0, None, None),  # datasheet 'up to 600 W (configurable)'; aiconfigurator
    "gb300": (1400.0, None, 7500 / 4),
}


@pytest.mark.parametrize("key", sorted(POWER_PINS))
def test_power_fields_against_their_sources(key):
    g = GPUS[key]
    tdp, idle, server = POWER_PINS[key]
    assert (g.tdp_w, g.idle_w, g.server_power_w_per_gpu) == (tdp, idle, server)
    assert g.power_source


def test_profiles_without_a_published_board_power_say_so():
    for key in ("a10g", "h800"):
        assert GPUS[key].tdp_w is None and "not found" in GPUS[key].power_source


def test_llama_3_3_70b_fp8_dynamic_against_vllm_logs(catalog):
    """vLLM on H100 loading RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic: 'Model loading took: 67.72 GiB' at TP=1 and
    33.88 GiB at TP=2 (llm-d-planner docs/empirical-vllm-memory-results.md, the preset's weights_source): FP8 weights
    with a scale per output channel, the embedding and LM head in bf16."""
    for tp, logged in ((1, 67.72), (2, 33.88)):
        r = evaluate(Scenario(model="llama-3.3-70b", ckpt="fp8-dynamic", gpu="h100-sxm", tp=tp), catalog)
        assert r.metrics["weight_bytes_per_gpu"] / GiB == pytest.approx(logged, rel=0.002)


def test_llama_3_3_70b_nvfp4_is_about_3_5x_smaller(catalog):
    """LMSYS: 'FP4-quantized Llama 3.3 70B models achieve a 3.5x reduction in model size' — the blocks' linear layers
    at 4.5 bits (an E4M3 scale per 16 + fp32 per tensor), the 1.05 B-entry embedding and LM head in bf16."""

    def total(ckpt: str) -> float:
        r = evaluate(Scenario(model="llama-3.3-70b", ckpt=ckpt, gpu="b200"), catalog)
        return r.metrics["weight_bytes_total"]

    assert total("bf16") / total("nvfp4") == pytest.approx(3.5, rel=0.06)
    m = catalog.models["llama-3.3-70b"]
    assert m.checkpoint().repo == "meta-llama/Llama-3.3-70B-Instruct"  # the default: the publisher's bf16


def test_llama_3_1_8b_against_vllm_log(catalog):
    """vLLM on one H100, Llama-3.1-8B-Instruct: 'Model loading took: 14.99 GiB memory' (llm-d-planner)."""
    r = evaluate(Scenario(model="llama-3.1-8b", gpu="h100-sxm"), catalog)
    assert r.metrics["weight_bytes_per_gpu"] / GiB == pytest.approx(14.99, rel=0.002)


def test_every_logged_checkpoint_matches_its_log(catalog):
    """Each [[checkpoints]] entry with weights_gib_published (all logged on H100 80GB) plans to it (gpt-oss-20b's is
    vLLM 0.19's, which pads a little more than 0.11: test_checkpoints.py holds both)."""
    seen = 0
    for key, m in catalog.models.items():
        for c in m.checkpoints:
            if c.weights_gib_published is None:
                continue
            link = dict(model=key, ckpt=c.key, gpu="h100-sxm", tp=c.weights_tp)
            got = evaluate(Scenario(**link), catalog).metrics["weight_bytes_per_gpu"] / GiB
            assert got == pytest.approx(c.weights_gib_published, rel=0.015), (key, c.key)
            seen += 1
    assert seen >= 4


def test_every_preset_names_its_published_checkpoint(catalog):
    for key, m in catalog.models.items():
        assert m.checkpoints, key
        assert m.checkpoint() is m.checkpoints[0] and m.checkpoints[0].source


def test_qwen3_next_preset_matches_its_config(catalog):
    """Model card: '80B in total and 3B activated'; 12 full-attention + 36 Gated DeltaNet layers; one MTP layer
    (vLLM qwen3_next_mtp.py: getattr(config, 'num_nextn_predict_layers', 1))."""
    m = catalog.models["qwen3-next-80b-a3b"]
    assert param_counts(m).total == pytest.approx(80e9, rel=0.02)
    assert (m.state_layers, m.full_attention_layers, m.mtp_layers) == (36, 12, 1)
    r = evaluate(Scenario(model="qwen3-next-80b-a3b", gpu="h200", tp=2, spec_method="mtp"), catalog)
    assert r.metrics["fits"] and r.metrics["draft_weight_bytes_per_gpu"] > 0


def test_qwen3_nvfp4_checkpoints_keep_routers_and_head_in_bf16(catalog):
    """ModelOpt hf_quant_config.json: NVFP4, group 16, FP8 KV; exclude_modules = the routers (MoE) and lm_head."""
    for key in ("qwen3-30b-a3b", "qwen3-32b", "qwen3-235b-a22b"):
        c = catalog.models[key].checkpoint("nvfp4")
        assert c is not None and c.kvdtype == "fp8" and c.attention == "nvfp4" and c.gpus == "Blackwell"
