"""The shipped GPU profiles in ``hardware_profiles/`` and the loader's handling of bad files.

Pinned numbers are the vendors' published figures (dense, not 2:4-sparse);
each row cites the datasheet it comes from.  If a profile is edited, the
matching pin here must be changed deliberately, with its source.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from planner.model.catalog import load_gpus
from planner.units import GB, TERA
from tests.paths import HARDWARE_DIR

EXPECTED_KEYS = {
    "a100-40gb-sxm",
    "a100-80gb-sxm",
    "h100-sxm",
    "h100-pcie",
    "h200",
    "b200",
    "l4",
    "l40s",
    "mi300x",
    "mi325x",
}

# key: (capacity GB, bandwidth TB/s, dense bf16 TFLOP/s)
PUBLISHED = {
    # NVIDIA A100 datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
    # 40GB HBM2, 1,555 GB/s; BF16 312 | 624* (sparse)
    "a100-40gb-sxm": (40, 1.555, 312.0),
    # same datasheet, 80GB SXM column: 80GB HBM2e, 2,039 GB/s
    "a100-80gb-sxm": (80, 2.039, 312.0),
    # NVIDIA H100 datasheet, SXM column: 80GB, 3.35 TB/s, BF16 1,979* -> 989.4 dense
    "h100-sxm": (80, 3.35, 989.4),
    # NVIDIA H100 datasheet, PCIe column: 80GB HBM2e, 2 TB/s, BF16 1,513* -> 756 dense
    "h100-pcie": (80, 2.0, 756.0),
    # NVIDIA H200 datasheet: 141GB HBM3e, 4.8 TB/s, BF16 1,979* -> 989.4 dense
    "h200": (141, 4.8, 989.4),
    # NVIDIA DGX B200: 1,440 GB and 64 TB/s for 8 GPUs; HGX B200 BF16 4.5 PF sparse -> 2.25 PF dense
    "b200": (180, 8.0, 2250.0),
    # NVIDIA L4 datasheet: 24GB GDDR6, 300 GB/s, BF16 242* -> 121 dense
    "l4": (24, 0.3, 121.0),
    # NVIDIA L40S datasheet: 48GB GDDR6, 864 GB/s, BF16 362.05 | 733*
    "l40s": (48, 0.864, 362.05),
    # AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s, BF16 1,307.4 dense
    "mi300x": (192, 5.3, 1307.4),
    # AMD Instinct MI325X data sheet: 256 GB HBM3E, 6 TB/s, BF16 1,307.4 dense
    "mi325x": (256, 6.0, 1307.4),
}

# key: {dtype: dense peak in T(FL)OP/s} for the low-precision figures we pin.
PUBLISHED_LOW_PRECISION = {
    "a100-40gb-sxm": {"int8": 624.0},  # A100 datasheet INT8 624 | 1,248*
    "a100-80gb-sxm": {"int8": 624.0},
    "h100-sxm": {"fp8": 1978.9, "int8": 1978.9},  # H100 datasheet FP8/INT8 3,958*
    "h100-pcie": {"fp8": 1513.0},  # H100 datasheet PCIe FP8 3,026*
    "h200": {"fp8": 1978.9},  # H200 datasheet FP8 3,958*
    "b200": {"fp8": 4500.0, "fp4": 9000.0},  # DGX B200: FP8 72 PF sparse, FP4 72 PF dense, /8 GPUs
    "l4": {"fp8": 242.5},  # L4 datasheet FP8 485*
    "l40s": {"fp8": 733.0},  # L40S datasheet FP8 733 | 1,466*
    "mi300x": {"fp8": 2614.9, "int8": 2614.9},  # AMD MI300X data sheet
    "mi325x": {"fp8": 2614.9},  # AMD MI325X data sheet
}

# Chips whose tensor cores have no FP8 (Ampere) and none with FP4 except Blackwell.
NO_FP8 = {"a100-40gb-sxm", "a100-80gb-sxm"}
HAS_FP4 = {"b200"}

# One-direction GPU-to-GPU bandwidth per GPU, GB/s.
INTERCONNECT_ONE_WAY_GB_PER_S = {
    "a100-40gb-sxm": 300.0,  # NVLink3 600 GB/s bidirectional
    "a100-80gb-sxm": 300.0,
    "h100-sxm": 450.0,  # NVLink4 900 GB/s bidirectional
    "h200": 450.0,
    "b200": 900.0,  # NVLink5 1.8 TB/s bidirectional
    "h100-pcie": 64.0,  # PCIe Gen5 x16
    "l4": 32.0,  # PCIe Gen4 x16, no NVLink
    "l40s": 32.0,  # PCIe Gen4 x16, no NVLink
    "mi300x": 448.0,  # 7 x 128 GB/s bidirectional Infinity Fabric links
    "mi325x": 448.0,
}


@pytest.fixture(scope="module")
def shipped():
    gpus, problems = load_gpus()
    return gpus, problems


def _good_profile_text() -> str:
    return (HARDWARE_DIR / "h100-sxm.toml").read_text(encoding="utf-8")


# --- the shipped profiles -------------------------------------------------------


#: The profiles added for issue 19 (pinned in test_new_gpu_profiles.py).
NEW_KEYS = {"gb200", "b300", "mi355x", "h20", "h800", "l20", "rtx-4090", "rtx-5090", "rtx-pro-6000-blackwell", "a10g"}


#: Added for issue 32 (pinned in test_catalog_power.py).
ISSUE_32_KEYS = {"gb300", "rtx-pro-6000-blackwell-server"}


def test_all_profiles_load_without_problems(shipped):
    gpus, problems = shipped
    assert problems == []
    assert set(gpus) == EXPECTED_KEYS | NEW_KEYS | ISSUE_32_KEYS


@pytest.mark.parametrize("key", sorted(PUBLISHED))
def test_published_capacity_bandwidth_bf16(shipped, key):
    gpus, _ = shipped
    gpu = gpus[key]
    cap_gb, bw_tb_s, bf16_tflops = PUBLISHED[key]
    assert gpu.memory_bytes == pytest.approx(cap_gb * GB, rel=1e-9)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(bw_tb_s * TERA, rel=1e-9)
    assert gpu.peak_flop_per_s["bf16"] == pytest.approx(bf16_tflops * TERA, rel=1e-3)


@pytest.mark.parametrize("key", sorted(PUBLISHED_LOW_PRECISION))
def test_published_low_precision_peaks(shipped, key):
    gpus, _ = shipped
    for dtype, tflops in PUBLISHED_LOW_PRECISION[key].items():
        assert gpus[key].peak_flop_per_s[dtype] == pytest.approx(tflops * TERA, rel=1e-3), dtype


@pytest.mark.parametrize("key", sorted(EXPECTED_KEYS))
def test_fp8_is_twice_bf16_where_supported(shipped, key):
    """Guards against mixing a sparse figure with a dense one in the same profile."""
    peaks = shipped[0][key].peak_flop_per_s
    if key in NO_FP8:
        assert "fp8" not in peaks
        return
    assert "fp8" in peaks
    # L40S's own datasheet prints 733 vs 362.05 (2.02x); allow a few percent.
    assert peaks["fp8"] / peaks["bf16"] == pytest.approx(2.0, rel=0.03)


@pytest.mark.parametrize("key", sorted(EXPECTED_KEYS))
def test_fp4_only_where_supported_and_twice_fp8(shipped, key):
    peaks = shipped[0][key].peak_flop_per_s
    if key not in HAS_FP4:
        assert "fp4" not in peaks
        return
    assert peaks["fp4"] / peaks["fp8"] == pytest.approx(2.0, rel=0.03)


@pytest.mark.parametrize("key", sorted(INTERCONNECT_ONE_WAY_GB_PER_S))
def test_interconnect_is_one_direction(shipped, key):
    gpu = shipped[0][key]
    assert gpu.interconnect_bytes_per_s == pytest.approx(INTERCONNECT_ONE_WAY_GB_PER_S[key] * GB)


@pytest.mark.parametrize("key", sorted(EXPECTED_KEYS))
def test_every_profile_names_a_source_url_and_a_price(shipped, key):
    gpu = shipped[0][key]
    assert "http" in gpu.source
    assert gpu.price_per_gpu_hour_usd > 0


def test_memory_bound_ordering_is_sane(shipped):
    """Newer parts have more bandwidth; catches a TB/s vs GB/s slip."""
    g = shipped[0]
    bw = {k: v.memory_bandwidth_bytes_per_s for k, v in g.items()}
    assert bw["l4"] < bw["l40s"] < bw["a100-40gb-sxm"] < bw["a100-80gb-sxm"]
    assert bw["h100-pcie"] < bw["h100-sxm"] < bw["h200"] < bw["b200"]
    assert bw["mi300x"] < bw["mi325x"]


# --- the loader on bad files ----------------------------------------------------


def _copy_valid(tmp_path: Path, keys=("h100-sxm", "l4")) -> None:
    for k in keys:
        shutil.copy(HARDWARE_DIR / f"{k}.toml", tmp_path / f"{k}.toml")


def test_malformed_profile_is_reported_by_name_and_skipped(tmp_path):
    _copy_valid(tmp_path)
    (tmp_path / "broken.toml").write_text('name = "unterminated\nvendor = 3\n', encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert set(gpus) == {"h100-sxm", "l4"}
    assert len(problems) == 1
    assert problems[0].startswith("broken.toml:")
    assert "TOML" in problems[0]


def test_out_of_range_value_is_reported_by_name_and_skipped(tmp_path):
    _copy_valid(tmp_path)
    text = _good_profile_text().replace("memory_bandwidth_tb_per_s = 3.35", "memory_bandwidth_tb_per_s = -1")
    assert "memory_bandwidth_tb_per_s = -1" in text
    (tmp_path / "negative-bw.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert set(gpus) == {"h100-sxm", "l4"}
    assert len(problems) == 1
    assert problems[0].startswith("negative-bw.toml:")
    assert "memory_bandwidth_tb_per_s" in problems[0]


def test_profile_without_source_is_rejected_naming_source(tmp_path):
    _copy_valid(tmp_path)
    lines = [ln for ln in _good_profile_text().splitlines() if not ln.startswith("source =")]
    assert not any(ln.startswith("source") for ln in lines)
    (tmp_path / "no-source.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert "no-source" not in gpus
    assert set(gpus) == {"h100-sxm", "l4"}
    assert len(problems) == 1
    assert problems[0].startswith("no-source.toml:")
    assert "source" in problems[0].split(":", 1)[1]


def test_both_capacity_units_are_rejected(tmp_path):
    text = _good_profile_text().replace(
        "memory_capacity_gb = 80", "memory_capacity_gb = 80\nmemory_capacity_gib = 74.5"
    )
    assert "memory_capacity_gib = 74.5" in text
    (tmp_path / "both-units.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert gpus == {}
    assert len(problems) == 1
    assert problems[0].startswith("both-units.toml:")
    assert "exactly one of memory_capacity_gb or memory_capacity_gib" in problems[0]


def test_neither_capacity_unit_is_rejected(tmp_path):
    lines = [ln for ln in _good_profile_text().splitlines() if not ln.startswith("memory_capacity_gb")]
    (tmp_path / "no-capacity.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert gpus == {}
    assert len(problems) == 1 and problems[0].startswith("no-capacity.toml:")


def test_capacity_in_gib_is_converted_with_binary_units(tmp_path):
    text = _good_profile_text().replace("memory_capacity_gb = 80", "memory_capacity_gib = 80")
    (tmp_path / "gib.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert problems == []
    assert gpus["gib"].memory_bytes == 80 * 2**30


def test_unknown_field_is_rejected(tmp_path):
    """A typo such as a sparse-figure field must not be silently ignored."""
    text = _good_profile_text() + "sparse_tflops_bf16 = 1979.0\n"
    (tmp_path / "typo.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert gpus == {}
    assert len(problems) == 1
    assert problems[0].startswith("typo.toml:")
    assert "sparse_tflops_bf16" in problems[0]


def test_missing_folder_is_reported(tmp_path):
    gpus, problems = load_gpus(tmp_path / "nope")
    assert gpus == {}
    assert len(problems) == 1 and "folder not found" in problems[0]


@pytest.mark.parametrize(
    "line, field",
    [
        ("compute_memory_overlap = 1.5", "compute_memory_overlap"),
        ("compute_memory_overlap = -2", "compute_memory_overlap"),
        ("attention_compute_frac = 0", "attention_compute_frac"),
        ("attention_bandwidth_frac = 1.2", "attention_bandwidth_frac"),
    ],
)
def test_measured_refinements_out_of_range_are_named(tmp_path, line, field):
    (tmp_path / "refined.toml").write_text(_good_profile_text() + line + "\n", encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert gpus == {}
    assert len(problems) == 1 and field in problems[0]


def test_measured_refinements_load(tmp_path):
    text = (
        _good_profile_text()
        + "compute_memory_overlap = -0.4\nattention_compute_frac = 0.25\nattention_bandwidth_frac = 0.55\n"
    )
    (tmp_path / "refined.toml").write_text(text, encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert problems == []
    g = gpus["refined"]
    assert (g.compute_memory_overlap, g.attention_compute_frac, g.attention_bandwidth_frac) == (-0.4, 0.25, 0.55)


@pytest.mark.parametrize(
    "field, value",
    [("dense_tflops_bf16", "1e-300"), ("memory_bandwidth_tb_per_s", "1e-300"), ("interconnect_gb_per_s", "1e-9")],
)
def test_degenerate_but_positive_values_are_refused_by_name(field, value, tmp_path):
    """1e-300 TFLOP/s passed 'gt=0' and made every time infinite (findings crashed with a math domain error)."""
    text = (HARDWARE_DIR / "h100-sxm.toml").read_text(encoding="utf-8")
    lines = [f"{field} = {value}" if line.startswith(f"{field} ") else line for line in text.splitlines()]
    (tmp_path / "tiny.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    gpus, problems = load_gpus(tmp_path)
    assert gpus == {} and len(problems) == 1
    assert problems[0].startswith(f"tiny.toml: {field}: Input should be greater than or equal to")


# Multi-node layouts (issue 15): the scale-up domain and the network beyond it, with sources.
#: key: (GPUs sharing the scale-up link, scale-out GB/s per GPU one way)
NODES = {
    "h100-sxm": (8, 50.0),  # DGX H100: 8 × ConnectX-7 400 Gb/s
    "h200": (8, 50.0),
    "h800": (8, 50.0),  # DeepSeek-V3 report: "IB (50 GB/s)"
    "a100-80gb-sxm": (8, 25.0),  # DGX A100: 8 × ConnectX-6 200 Gb/s HDR
    "b300": (8, 100.0),  # DGX B300: 8 × 800 Gb/s
    "gb200": (72, 50.0),  # the NVL72 NVLink domain
    "l4": (8, 1.5625),  # AWS g6.48xlarge: 100 Gbps for 8 GPUs
}


def test_every_shipped_profile_states_its_node_and_network_with_a_source():
    import tomllib

    for path in sorted(HARDWARE_DIR.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for key in ("gpus_per_node", "scale_out_gb_per_s", "scale_out_latency_us", "scale_out_name"):
            assert key in data, (path.name, key)
        assert len(data["scale_out_source"]) > 40, path.name
    gpus, _ = load_gpus()
    for key, (per_node, gb_per_s) in NODES.items():
        assert gpus[key].gpus_per_node == per_node, key
        assert gpus[key].scale_out_bytes_per_s == pytest.approx(gb_per_s * GB), key


def test_a_profile_without_network_figures_gets_an_hgx_node():
    from planner.model.specs import GpuProfileFile

    f = GpuProfileFile(
        name="x", vendor="v", memory_capacity_gb=80, memory_bandwidth_tb_per_s=3, dense_tflops_bf16=900,
        interconnect_gb_per_s=450, price_usd_per_gpu_hour=1, source="s",
    )  # fmt: skip
    gpu = f.to_gpu("x")
    assert (gpu.gpus_per_node, gpu.scale_out_bytes_per_s) == (8, 50 * GB)
    assert gpu.scale_out_latency_s == pytest.approx(45e-6)
    assert "gpus_per_node" not in f.model_dump(exclude_none=True)  # a measured profile's TOML stays as it was
