"""``kvplan gpus`` / ``kvplan models``: every profile and preset, grouped, with its key facts."""

from __future__ import annotations

import io

from planner.cli.main import main


def listing(command: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    assert main([command], out=out, err=err) == 0
    assert err.getvalue() == ""
    return out.getvalue().splitlines()


def _rows(lines: list[str]) -> dict[str, str]:
    return {line.split()[0]: line for line in lines if line.startswith("  ")}


def test_gpus_grouped_by_vendor_and_generation_with_key_facts(catalog) -> None:
    lines = listing("gpus")
    headers = [line for line in lines if not line.startswith("  ")]
    assert headers[:2] == ["NVIDIA · Ampere", "NVIDIA · Ada Lovelace"]  # oldest generation first
    assert {"NVIDIA · Hopper", "NVIDIA · Blackwell", "NVIDIA · Blackwell Ultra", "AMD · CDNA 4"} <= set(headers)
    assert len(headers) == len(set(headers))  # each group once
    rows = _rows(lines)
    assert set(rows) == set(catalog.gpus) | set(catalog.measured)
    # memory, bandwidth, bf16 peak and price, as the profile states them
    assert "186 GB" in rows["gb200"] and "8 TB/s" in rows["gb200"] and "2,500 TFLOP/s bf16" in rows["gb200"]
    assert "$10.5/GPU-h" in rows["gb200"]
    assert "96 GB" in rows["h20"] and "148 TFLOP/s bf16" in rows["h20"] and rows["h20"].endswith("not priced")
    hopper = lines.index("NVIDIA · Hopper")
    assert all(k in " ".join(lines[hopper : hopper + 6]) for k in ("h100-sxm", "h20", "h200", "h800"))


def test_models_grouped_by_family_with_key_facts(catalog) -> None:
    lines = listing("models")
    rows = _rows(lines)
    assert set(rows) == set(catalog.models)
    headers = [line for line in lines if not line.startswith("  ")]
    assert headers[0] == "Llama (Meta)" and "gpt-oss (OpenAI)" in headers and "Kimi (Moonshot AI)" in headers
    oss = rows["gpt-oss-120b"]
    assert "117B (5.71B active)" in oss and "36 layers (18 full + 18 sliding (128))" in oss
    assert "GQA" in oss and "KV 72.0 KiB/token bf16" in oss and "131,072-token context" in oss
    assert "12 full + 36 chunked (8,192)" in rows["llama-4-scout-17b-16e"]
    assert "MLA" in rows["deepseek-r1"] and "KV 68.6 KiB/token" in rows["deepseek-r1"]
    deepseek = lines.index("DeepSeek")
    assert rows["deepseek-r1-distill-llama-70b"] in lines[deepseek:]  # a distill sits with its maker
