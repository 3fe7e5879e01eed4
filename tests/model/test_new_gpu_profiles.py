"""The GPU profiles added for the hardware people deploy now (issue 19).

Each pin below is the figure the profile's ``source`` cites (dense, not 2:4-sparse), with the
reason where sources disagree written in the profile's ``notes``.  If a profile is edited, the
pin must be changed deliberately, with its source.
"""

from __future__ import annotations

import math

import pytest

from planner.engine.evaluate import evaluate
from planner.links import from_query, to_query_string
from planner.model.catalog import load_gpus
from planner.model.scenario import Scenario
from planner.units import GB, TERA, GiB
from tests.paths import HARDWARE_DIR

GPUS, PROBLEMS = load_gpus()

# key: (vendor, generation, capacity bytes, TB/s, {dtype: dense T(FL)OP/s}, GB/s one way, $/GPU-h)
PINS = {
    # Blackwell datasheet per GPU (via NVIDIA aiconfigurator gb200.yaml); "186 GB" as printed
    "gb200": ("NVIDIA", "Blackwell", 186 * GB, 8.0, {"bf16": 2500, "fp8": 5000, "int8": 5000, "fp4": 10000}, 900, 10.5),
    # NVIDIA Exemplar DGX B300 + aiconfigurator b300_sxm.yaml (INT8 cut on Blackwell Ultra)
    "b300": (
        "NVIDIA",
        "Blackwell Ultra",
        288 * GB,
        7.7,
        {"bf16": 2250, "fp8": 4500, "int8": 153.5, "fp4": 13500},
        900,
        7.4,
    ),
    # AMD MI355X specifications (dense); 7 x 76.5 GB/s Infinity Fabric
    "mi355x": ("AMD", "CDNA 4", 288 * GB, 8.0, {"bf16": 2500, "fp8": 5000, "int8": 5000, "fp4": 10100}, 535.5, 2.59),
    # alibaba/InferSim hardware/gpu.py
    "h20": ("NVIDIA", "Hopper", 96 * GB, 4.096, {"bf16": 148, "fp8": 296, "int8": 296}, 450, 0.0),
    # H100 SXM silicon with NVLink cut to 400 GB/s bidirectional
    "h800": ("NVIDIA", "Hopper", 80 * GB, 3.35, {"bf16": 989.4, "fp8": 1978.9, "int8": 1978.9}, 200, 0.0),
    # 864 GB/s GDDR6, 119.5 TFLOPS FP16 tensor (secondary, see notes)
    "l20": ("NVIDIA", "Ada Lovelace", 48 * GB, 0.864, {"bf16": 119.5, "fp8": 239, "int8": 239}, 32, 0.0),
    # Ada whitepaper v2.02 App. A, FP32-accumulate rates
    "rtx-4090": ("NVIDIA", "Ada Lovelace", 24 * GB, 1.008, {"bf16": 165.2, "fp8": 330.3, "int8": 660.6}, 32, 0.34),
    # RTX Blackwell whitepaper Table 3
    "rtx-5090": ("NVIDIA", "Blackwell", 32 * GB, 1.792, {"bf16": 209.5, "fp8": 419, "fp4": 1676}, 64, 0.69),
    # RTX PRO Blackwell whitepaper Table 4 (Workstation Edition) x aiconfigurator ratios
    "rtx-pro-6000-blackwell": (
        "NVIDIA",
        "Blackwell",
        96 * GB,
        1.792,
        {"bf16": 503.8, "fp8": 1007.6, "int8": 1007.6, "fp4": 2015.2},
        64,
        1.69,
    ),
    # Baseten's A10 vs A10G comparison (600 GB/s; ~70 TFLOPS tensor), AWS g5.xlarge price
    "a10g": ("NVIDIA", "Ampere", 24 * GB, 0.6, {"bf16": 70}, 32, 1.006),
}
#: Driver-reported totals where the CUDA / torch figure is known (bytes).
REPORTED = {"h20": 97285 * 2**20, "rtx-4090": 25_386_352_640}


def test_every_new_profile_validates() -> None:
    assert PROBLEMS == []
    assert set(PINS) <= set(GPUS)
    for key in PINS:
        text = (HARDWARE_DIR / f"{key}.toml").read_text(encoding="utf-8")
        assert "source =" in text and "price_source =" in text, key


@pytest.mark.parametrize("key", sorted(PINS))
def test_pinned_datasheet_figures(key: str) -> None:
    vendor, generation, capacity, bw_tb, peaks, link_gb, price = PINS[key]
    gpu = GPUS[key]
    assert (gpu.vendor, gpu.generation) == (vendor, generation)
    assert gpu.memory_bytes == pytest.approx(capacity, rel=1e-9)
    assert gpu.memory_bandwidth_bytes_per_s == pytest.approx(bw_tb * TERA, rel=1e-9)
    assert {dt: v / TERA for dt, v in gpu.peak_flop_per_s.items()} == pytest.approx(peaks, rel=1e-6)
    assert gpu.interconnect_bytes_per_s == pytest.approx(link_gb * GB)
    assert gpu.price_per_gpu_hour_usd == price


@pytest.mark.parametrize("key", sorted(PINS))
def test_sources_and_prices_are_stated(key: str) -> None:
    gpu = GPUS[key]
    assert "http" in gpu.source
    text = (HARDWARE_DIR / f"{key}.toml").read_text(encoding="utf-8")
    if gpu.price_per_gpu_hour_usd == 0:  # no published price found: said so, never a guess
        assert 'price_source = "not found' in text
    else:
        assert "http" in text.split("price_source =", 1)[1].split("\n", 1)[0]


@pytest.mark.parametrize("key", sorted(REPORTED))
def test_driver_reported_memory(key: str) -> None:
    reported = GPUS[key].memory_reported_bytes
    assert reported == pytest.approx(REPORTED[key], rel=1e-5)
    # the printed "24 GB" / "96 GB" are in effect GiB: the driver reports a little less than that
    assert GPUS[key].memory_bytes < reported < GPUS[key].memory_bytes / GB * GiB


def test_low_precision_is_never_a_sparse_figure() -> None:
    """FP8 is 2x BF16 on every part here (the FP32-accumulate rates for GeForce)."""
    for key in PINS:
        peaks = GPUS[key].peak_flop_per_s
        if "fp8" in peaks:
            assert peaks["fp8"] / peaks["bf16"] == pytest.approx(2.0, rel=0.01), key


@pytest.mark.parametrize("key", sorted(PINS))
def test_round_trips_through_a_link_and_evaluates(key: str, catalog) -> None:
    # 24 GB cards at tp 1: at tp 2 NCCL's start-up memory (vLLM logs ~1.6 GiB) leaves too little beside
    # the 0.9 utilisation budget for CUDA graphs (memory_headroom_bytes_per_gpu < 0: it would not start)
    s = Scenario(gpu=key, model="qwen3-8b")
    link = to_query_string(s)
    assert f"gpu={key}" in link
    back, issues = from_query(link, set(catalog.profile_keys()), set(catalog.models), catalog.engine_aliases())
    assert issues == [] and back == s
    m = evaluate(back, catalog).metrics
    assert m["fits"] and math.isfinite(m["tpot_s"]) and m["tpot_s"] > 0
    # vLLM sizes from the memory the driver reports (every profile states it, estimated where not published)
    assert m["usable_bytes_per_gpu"] == pytest.approx(GPUS[key].memory_reported_bytes * m["mem_util_frac"], rel=1e-6)
