"""Fit the efficiency model to the published rows and write each engine profile's ``[timing]``.

    .venv/bin/python benchmarks/fit_timing.py            # print the fitted sections
    .venv/bin/python benchmarks/fit_timing.py --write    # replace [timing] in engine_profiles/*.toml

The fit (``benchmarks/accuracy/timing_fit.py``) uses every latency row of
``benchmarks/data/published-serving.json`` with ``fit_role = "fit"``.  ``--write`` replaces
the text from each file's ``[timing]`` line to its end (the ``[memory]`` part above is left
as it is), so ``[timing]`` must stay the last section of an engine profile.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.accuracy.rows import load_rows  # noqa: E402 — after the path set-up above
from benchmarks.accuracy.timing_fit import KIND_OF, Fit, fit_rows  # noqa: E402
from planner import tomlfile  # noqa: E402
from planner.model.catalog import ENGINE_PROFILES, load_catalog, shipped_dir  # noqa: E402
from planner.model.engine_timing import EngineTiming  # noqa: E402
from planner.model.engine_versions import split_key  # noqa: E402

#: shipped profile → the engine group whose fitted values it takes, and what to say about its data
SHIPPED: dict[str, tuple[str, str]] = {
    "trtllm@0.9": (
        "trtllm",
        "TensorRT-LLM v0.5, v0.6.1 and v0.9.0 performance tables (gptSessionBenchmark, static batches)",
    ),
    "vllm@0.19": (
        "vllm",
        "the vLLM 0.19.1 batch-1 inter-token-latency intercepts (H100, B200); every other value is the pool's",
    ),
    "vllm@0.33": (
        "vllm",
        "the vLLM 0.19.1 batch-1 inter-token-latency intercepts (H100, B200); every other value is the pool's "
        "(vllm@0.19's fit: the roofline of this version where no kernel table covers the GPU)",
    ),
    "sglang@0.5.23": (
        "",
        "no published SGLang measurement kvplan can reproduce was found (the public SGLang figures are "
        "expert-parallel DeepSeek deployments): every value is the pool over all engines",
    ),
}


def _num(v: float) -> float:
    """4 significant digits: what a fit over a few dozen published rows supports."""
    return float(f"{v:.4g}")


TIMING_FIELDS = (
    "step_overhead_us",
    "layer_overhead_us",
    "decode_layer_overhead_us",
    "matmul_half_tokens",
    "attention_compute_frac",
    "attention_bandwidth_frac",
    "gqa_reread_frac",
    "allreduce_overhead_us",
    "nvlink_bus_frac",
    "pcie_bus_frac",
)
FAMILY_FIELDS = ("matmul_frac", "matmul_frac_8bit", "bandwidth_frac", "moe_matmul_frac")


def timing_toml(t: EngineTiming) -> str:
    """The ``[timing]`` section of ``t`` (4 significant digits), written by the project's one TOML writer."""
    timing: dict = {"source": t.source, "fitted_rows": t.fitted_rows}
    timing |= {name: _num(getattr(t, name)) for name in TIMING_FIELDS}
    timing["families"] = {
        fam: {name: _num(getattr(ft, name)) for name in FAMILY_FIELDS} for fam, ft in t.families.items()
    }
    return tomlfile.dumps({"timing": timing})


def fitted_sections() -> tuple[Fit, dict[str, str]]:
    catalog = load_catalog()
    rows = [r for r in load_rows() if r.fit_role == "fit" and r.category in KIND_OF]
    fit = fit_rows(rows, catalog)
    groups = sorted({r.source_group or "" for r in rows})
    out = {}
    for key, (engine, what) in SHIPPED.items():
        own = sum(1 for r in rows if r.engine_key == engine) if engine else 0
        source = (
            f"benchmarks/fit_timing.py: {len(rows)} published rows ({', '.join(groups)}), engines and GPU families "
            f"partially pooled (benchmarks/accuracy/timing_fit.py); this engine's own rows: {own}, from {what}"
        )
        out[key] = timing_toml(fit.timing(engine, source))
    return fit, out


def replace_timing(path: Path, section: str) -> None:
    """Replace the file's ``[timing]`` tables (``[timing]`` and ``[timing.*]``), keeping every other section."""
    text = path.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n[timing]")
    if not sep:
        raise SystemExit(f"{path}: no [timing] section to replace")
    tail = ""
    for m in re.finditer(r"^\[(?!timing[.\]])", rest, flags=re.M):  # the next table that is not [timing...]
        tail = "\n" + rest[m.start() :]
        break
    path.write_text(head.rstrip("\n") + "\n\n" + section.rstrip("\n") + "\n" + tail, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace [timing] in engine_profiles/*.toml")
    args = ap.parse_args()
    _, sections = fitted_sections()
    for key, section in sections.items():
        name, version = split_key(key)
        path = Path(str(shipped_dir(ENGINE_PROFILES) / name / f"{version}.toml"))
        if args.write:
            replace_timing(path, section)
            print(f"wrote {path}")
        else:
            print(f"# {key}.toml\n{section}")


if __name__ == "__main__":
    main()
