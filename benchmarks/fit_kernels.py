"""Fit the measured-kernel basis's per-step costs (the ``[kernels]`` section of engine profiles).

The kernel tables time the GEMMs, attention, MoE and collectives; what they do not hold — the scheduler's
cost per step, the gaps between a step's kernels per layer (eager in a step with prefill tokens, CUDA-graph
replay in a decode-only one) and the element-wise kernels (norms, RoPE, activation: the bandwidth share
their traffic reaches) — is fitted here to the published 2025–26 rows marked ``fit_role = "fit"`` in
benchmarks/data/published-serving-2025.json (one TensorRT-LLM throughput row in three, by a hash of the
row id; benchmarks/accuracy/modern.py predicts them).  Each TensorRT-LLM version with such rows is fitted
on its own rows; vLLM 0.33 and SGLang 0.5.23 have no fitted row (every one of their rows is held out) and
take the pool of the TensorRT-LLM fits — the costs of the kernels' surroundings, not the kernels.
Rows on GPUs whose kernel tables came after this fit (``modern.AFTER_FIT_GPUS``: GB300, the RTX PRO 6000
Server Edition) are held out whatever their ``fit_role``, so a rerun fits the same rows as the shipped sections.

Least squares on log errors (``planner.calibration.fit.levenberg_marquardt``), each parameter in an
unbounded space with a prior toward a plausible centre (``PARAMS``, ``PRIOR_WEIGHT``).

    .venv/bin/python benchmarks/fit_kernels.py            # print the sections and the fit errors
    .venv/bin/python benchmarks/fit_kernels.py --write    # replace [kernels] in engine_profiles/
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.accuracy import modern  # noqa: E402 — after the path set-up above
from planner.calibration.fit import from_u, levenberg_marquardt, to_u  # noqa: E402
from planner.engine.evaluate import compute  # noqa: E402
from planner.engine.inputs import EngineInputs  # noqa: E402
from planner.engine.saturation import max_throughput  # noqa: E402
from planner.model.catalog import ENGINE_PROFILES, load_catalog, shipped_dir  # noqa: E402
from planner.model.engine_versions import split_key  # noqa: E402
from planner.units import US_PER_S  # noqa: E402

#: (name, transform, prior centre, prior sd in u units)
PARAMS = (
    ("step_overhead_us", "positive", 300.0, 1.0),
    ("layer_overhead_us", "positive", 20.0, 1.5),
    ("decode_layer_overhead_us", "positive", 5.0, 1.0),
    ("elementwise_bandwidth_frac", "frac", 0.7, 0.5),
    # the host's work per sequence of a step: centred on TensorRT-LLM's own measurement, GPT-OSS-120B on GB200 at
    # max_batch_size 1536, "the average per iteration host_step_time is 45.11 ms" (NVIDIA/TensorRT-LLM PR #10273):
    # 45.11 ms / 1,536 = 29.4 µs; a factor e^0.5 either way at one sd
    ("host_us_per_seq", "positive", 29.4, 0.5),
    # this version's expert layer ÷ the table release's (TensorRT-LLM 1.3.0rc20's): the MoE rows alone inform it;
    # centred on the tables' own kernels, a factor e^0.3 = 1.35 either way at one sd
    ("moe_time_ratio", "positive", 1.0, 0.3),
)
#: Not pooled for the versions without fitted rows: their tables are their own engine's (vLLM 0.24, SGLang 0.5.14),
#: so TensorRT-LLM's gap to its newer tables says nothing of theirs — the tables' own kernels, 1.
OWN_ENGINE_ONLY = {"moe_time_ratio": 1.0}
#: The prior's weight against the rows' log errors: the constants stay physical (a scheduler's few hundred µs, a
#: bandwidth share near a streaming kernel's) and the rows' structure the kernels do not explain stays visible.
PRIOR_WEIGHT = 1.0
#: Fitted on their own rows; the others take the pool of these.
OWN_FIT = ("trtllm@1.0", "trtllm@1.1", "trtllm@1.2")
POOLED = ("vllm@0.33", "sglang@0.5.23")


def _with(x: EngineInputs, base_e: np.ndarray, base_frac: float, values: dict[str, float]) -> EngineInputs:
    return x.with_(
        step_overhead_s=np.full_like(x.step_overhead_s, values["step_overhead_us"] / US_PER_S),
        layer_overhead_s=np.full_like(x.layer_overhead_s, values["layer_overhead_us"] / US_PER_S),
        decode_layer_overhead_s=np.full_like(x.decode_layer_overhead_s, values["decode_layer_overhead_us"] / US_PER_S),
        elementwise_s_per_token=base_e * base_frac / values["elementwise_bandwidth_frac"],
        host_s_per_seq=np.full_like(x.host_s_per_seq, values["host_us_per_seq"] / US_PER_S),
        moe_time_ratio=np.full_like(x.moe_time_ratio, values["moe_time_ratio"]),
    )


def fit(cases: list[modern.Case], catalog) -> tuple[dict[str, float], list[float]]:
    """The parameters minimising Σ log²(predicted / measured) over ``cases`` (throughput rows), and the errors."""
    x = modern.stacked_inputs(cases, catalog).as_arrays()
    kv = compute(x)["max_concurrent_sequences"]  # memory does not depend on the fitted costs
    measured = np.array([c.row.measured for c in cases])
    base_frac = float(catalog.engine(cases[0].row.engine_profile).kernels.elementwise_bandwidth_frac)
    base_e = x.elementwise_s_per_token
    u0 = np.array([to_u(kind, centre) for _, kind, centre, _ in PARAMS])
    sd = np.array([s for *_, s in PARAMS])

    def values(u) -> dict[str, float]:
        return {name: float(from_u(kind, v)) for (name, kind, _, _), v in zip(PARAMS, u, strict=True)}

    def residuals(u):
        pred = max_throughput(_with(x, base_e, base_frac, values(u)), kv)["max_throughput_output_tokens_per_s_per_gpu"]
        r = np.log(np.maximum(np.asarray(pred), 1e-9) / measured)
        return np.concatenate([r, PRIOR_WEIGHT * (u - u0) / sd])

    result = levenberg_marquardt(residuals, u0)
    best = values(result.u)
    pred = max_throughput(_with(x, base_e, base_frac, best), kv)["max_throughput_output_tokens_per_s_per_gpu"]
    return best, list(np.asarray(pred) / measured - 1.0)


def section(values: dict[str, float], source: str, rows: int, head: dict[str, str]) -> str:
    lines = ["[kernels]"]
    for key in ("engine", "version", "relation"):
        lines.append(f'{key} = "{head[key]}"')
    lines.append(f'source = "{source}"')
    lines.append(f"fitted_rows = {rows}")
    for name, *_ in PARAMS:
        lines.append(f"{name} = {values[name]:.4g}")
    lines.append(f'moe_distribution = "{head["moe_distribution"]}"')
    if head.get("moe_distribution_mla"):
        lines.append(f'moe_distribution_mla = "{head["moe_distribution_mla"]}"')
    if head.get("moe_distribution_source"):
        lines.append(f'moe_distribution_source = "{head["moe_distribution_source"]}"')
    return "\n".join(lines) + "\n"


def replace_kernels(path: Path, text: str) -> None:
    """Replace the file's ``[kernels]`` table (it is the last one; everything before it stays)."""
    old = path.read_text(encoding="utf-8")
    head, sep, rest = old.partition("\n[kernels]")
    if not sep:
        raise SystemExit(f"{path}: no [kernels] section to replace")
    tail = ""
    m = re.search(r"^\[", rest, flags=re.M)
    if m:
        tail = "\n" + rest[m.start() :]
    path.write_text(head.rstrip("\n") + "\n\n" + text + tail, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="replace [kernels] in engine_profiles/<engine>/<version>.toml")
    args = ap.parse_args()
    catalog = load_catalog()
    cases, _ = modern.cases(modern.load_rows(), catalog)
    usable = [
        c
        for c in cases
        if c.row.fit_role == "fit" and c.row.category == "throughput" and c.basis.startswith("measured")
    ]
    fitted: dict[str, dict[str, float]] = {}
    sections: dict[str, str] = {}
    for key in OWN_FIT:
        own = [c for c in usable if c.row.engine_profile == key]
        best, errs = fit(own, catalog)
        fitted[key] = best
        med = statistics.median(abs(e) for e in errs)
        print(
            f"{key}: {len(own)} fitted rows, in-sample median |error| {med:.1%}, signed {statistics.median(errs):+.1%}"
        )
        print("   " + ", ".join(f"{k} {v:.4g}" for k, v in best.items()))
        src = (
            f"benchmarks/fit_kernels.py: least squares on log errors over {len(own)} published {key} throughput rows "
            "(trtllm-bench, fit_role = fit in benchmarks/data/published-serving-2025.json)"
        )
        sections[key] = section(best, src, len(own), _head(catalog, key))
    pool = {name: float(np.exp(np.mean([np.log(fitted[k][name]) for k in OWN_FIT]))) for name, *_ in PARAMS}
    pool.update(OWN_ENGINE_ONLY)
    for key in POOLED:
        src = (
            "benchmarks/fit_kernels.py: no row of this version is fitted (all held out): the geometric mean of the "
            f"{', '.join(OWN_FIT)} fits"
        )
        sections[key] = section(pool, src, 0, _head(catalog, key))
    for key, text in sections.items():
        name, version = split_key(key)
        path = Path(str(shipped_dir(ENGINE_PROFILES) / name / f"{version}.toml"))
        if args.write:
            replace_kernels(path, text)
            print(f"wrote {path}")
        else:
            print(f"# {key}\n{text}")


def _head(catalog, key: str) -> dict[str, str]:
    k = catalog.engines[key].kernels
    return dict(
        engine=k.engine,
        version=k.version,
        relation=k.relation,
        moe_distribution=k.moe_distribution,
        moe_distribution_mla=k.moe_distribution_mla or "",
        moe_distribution_source=k.moe_distribution_source,
    )


if __name__ == "__main__":
    main()
