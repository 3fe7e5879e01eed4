"""Fit the GPU power model (planner/engine/power.py) to the ML.ENERGY v3 measurements and report its error.

    .venv/bin/python benchmarks/power_fit.py               # fit on the H100 runs, report the B200 runs held out
    .venv/bin/python benchmarks/power_fit.py --prompts 2   # the same with the assumed prompt lengths doubled

Data: ``benchmarks/data/ml_energy_v3_llm.csv`` (Apache-2.0, ML.ENERGY; NOTICE beside it): vLLM 0.11.1, the
steady-state average board power per GPU of each configuration (model, GPU, GPUs, max_num_seqs), its mean running
batch and mean output length.  Each row is planned with kvplan at that batch, output and an assumed prompt length
(``PROMPT_TOKENS``: the results do not publish their prompts' lengths), giving the prefill share f_p and each
step's u_c = FLOP / (peak · t) and u_m = bytes / (bandwidth · t); the measured power gives
y = (P − P_idle) / (P_TDP − P_idle), and

    y = a + b_c · (f_p·u_c,prefill + (1 − f_p)·u_c,decode) + b_m · (f_p·u_m,prefill + (1 − f_p)·u_m,decode)

is fitted by least squares with non-negative b_c, b_m on the fit set (``FIT_GPU``: every H100 run of a model with a
preset of its shape).  The B200 runs are held out (a GPU the fit never saw), reported by dense / MoE and one /
several GPUs: mean absolute error and bias of the board power (% of measured), and of the energy per output token
(which also carries kvplan's throughput error), with the fitted and the committed (``POWER_COEFFS``) coefficients.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.engine.evaluate import evaluate  # noqa: E402 — after the path set-up above
from planner.engine.power import POWER_COEFFS  # noqa: E402
from planner.errors import ScenarioError  # noqa: E402
from planner.model.catalog import Catalog, load_catalog  # noqa: E402
from planner.model.scenario import Scenario  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "ml_energy_v3_llm.csv"
#: Assumed mean prompt tokens per task (not published with the results): LMArena first turns are short chats,
#: GPQA-diamond a question with four choices in a chat template, Sourcegraph FIM a code file around the gap.
PROMPT_TOKENS = {"lm-arena-chat": 256, "gpqa": 512, "sourcegraph-fim": 2048}
GPUS = {"H100": "h100-sxm", "B200": "b200"}
#: ML.ENERGY model id → kvplan link (the preset of the same shape and checkpoint format).
MODELS: dict[str, dict[str, str]] = {
    "Qwen/Qwen3-8B": {"model": "qwen3-8b"},
    "Qwen/Qwen3-32B": {"model": "qwen3-32b"},
    "meta-llama/Llama-3.1-8B-Instruct": {"model": "llama-3.1-8b"},
    "google/gemma-3-27b-it": {"model": "gemma-3-27b"},
    "meta-llama/Llama-3.1-70B-Instruct": {"model": "llama-3.1-70b"},
    "meta-llama/Llama-3.3-70B-Instruct": {"model": "llama-3.3-70b"},
    "meta-llama/Llama-3.1-405B-Instruct": {"model": "llama-3.1-405b"},
    "meta-llama/Llama-3.1-405B-Instruct-FP8": {"model": "llama-3.1-405b", "wdtype": "fp8"},
    "Qwen/Qwen3-30B-A3B-Instruct-2507": {"model": "qwen3-30b-a3b"},
    "Qwen/Qwen3-30B-A3B-Thinking-2507": {"model": "qwen3-30b-a3b"},
    "Qwen/Qwen3-235B-A22B-Instruct-2507": {"model": "qwen3-235b-a22b"},
    "Qwen/Qwen3-235B-A22B-Thinking-2507": {"model": "qwen3-235b-a22b"},
    "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8": {"model": "qwen3-235b-a22b", "ckpt": "fp8"},
    "Qwen/Qwen3-235B-A22B-Thinking-2507-FP8": {"model": "qwen3-235b-a22b", "ckpt": "fp8"},
    "openai/gpt-oss-120b": {"model": "gpt-oss-120b"},
    "openai/gpt-oss-20b": {"model": "gpt-oss-20b"},
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": {"model": "llama-4-scout-17b-16e"},
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8": {"model": "llama-4-maverick-17b-128e", "wdtype": "fp8"},
    "deepseek-ai/DeepSeek-V3.1": {"model": "deepseek-v3"},
    "deepseek-ai/DeepSeek-R1-0528": {"model": "deepseek-r1"},
}


@dataclass(frozen=True)
class Row:
    """One ML.ENERGY configuration as planned."""

    group: str  # "fit" or the held-out group
    label: str
    measured_w: float
    tdp_w: float
    idle_w: float
    f_p: float
    uc: tuple[float, float]  # (prefill, decode)
    um: tuple[float, float]
    measured_j: float  # energy per output token
    gpu_seconds_per_token: float  # kvplan's GPUs ÷ serving rate at the row's batch

    def predicted_w(self, coeffs: tuple[float, float, float]) -> float:
        a, bc, bm = coeffs
        u = [min(max(a + bc * c + bm * m, 0.0), 1.0) for c, m in zip(self.uc, self.um, strict=True)]
        return self.idle_w + (self.tdp_w - self.idle_w) * (self.f_p * u[0] + (1 - self.f_p) * u[1])


FIT_GPU = "H100"


def group_of(r: dict[str, str]) -> str:
    if r["gpu_model"] == FIT_GPU:
        return "fit"
    kind = "dense" if r["architecture"].startswith("Dense") else "MoE"
    gpus = "1 GPU" if r["num_gpus"] == "1" else "several GPUs"
    return f"held out: {r['gpu_model']}, {kind}, {gpus}"


def link_of(r: dict[str, str], prompt_scale: float) -> dict | None:
    base = MODELS.get(r["model_id"])
    if base is None:
        return None
    tp, ep, dp, n = (int(r[k]) for k in ("tp", "ep", "dp", "num_gpus"))
    layout = {"tp": n} if dp == 1 else {"tp": tp, "dp": dp, "ep": ep}
    if dp == 1 and ep > 1:
        layout["ep"] = ep
    return {
        **base,
        **layout,
        "gpu": GPUS[r["gpu_model"]],
        "engine": "vllm@0.19",  # the profile nearest the measured vLLM 0.11.1 (the newest, 0.33, is the default)
        "batch": max(1, round(float(r["avg_batch_size"]))),
        "prompt": max(1, round(PROMPT_TOKENS[r["task"]] * prompt_scale)),
        "output": max(1, round(float(r["avg_output_len"]))),
    }


def planned_rows(
    catalog: Catalog, prompt_scale: float = 1.0, path: Path = DATA, where: Callable[[dict], bool] | None = None
) -> tuple[list[Row], list[str]]:
    """Every row (that ``where`` keeps) kvplan can plan, and the ones it cannot (why)."""
    out, skipped = [], []
    with path.open(newline="") as f:
        for r in csv.DictReader(f):
            if where is not None and not where(r):
                continue
            link = link_of(r, prompt_scale)
            label = f"{r['model_id']} {r['task']} {r['gpu_model']}x{r['num_gpus']} seqs={r['max_num_seqs']}"
            if link is None:
                skipped.append(f"{label}: no preset of its shape")
                continue
            try:
                res = evaluate(Scenario(**link), catalog)
            except (ScenarioError, ValueError) as exc:
                skipped.append(f"{label}: {str(exc)[:80]}")
                continue
            m, x = res.metrics, res.inputs
            peak, bw = float(x.peak_flop_per_s), float(x.bandwidth_bytes_per_s)
            uc = (m["prefill_flop"] / peak / m["ttft_s"], m["decode_flop"] / peak / m["plain_tpot_s"])
            um = (m["prefill_bytes"] / bw / m["ttft_s"], m["decode_bytes"] / bw / m["plain_tpot_s"])
            out.append(
                Row(
                    group_of(r),
                    label,
                    float(r["avg_power_w_per_gpu"]),
                    float(x.tdp_w),
                    float(x.idle_w),
                    float(m["prefill_time_frac"]),
                    (min(uc[0], 1.0), min(uc[1], 1.0)),
                    (min(um[0], 1.0), min(um[1], 1.0)),
                    float(r["energy_per_token_j"]),
                    m["energy_per_output_token_j"] / m["power_per_gpu_w"],
                )
            )
    return out, skipped


def fit(rows: list[Row]) -> tuple[float, float, float]:
    """Least squares of y on (1, U_c, U_m) over ``rows`` with b_c, b_m ≥ 0 (module doc): the unconstrained fit, or,
    where a slope comes out negative, the fit without that term."""
    a = np.array(
        [[1.0, r.f_p * r.uc[0] + (1 - r.f_p) * r.uc[1], r.f_p * r.um[0] + (1 - r.f_p) * r.um[1]] for r in rows]
    )
    y = np.array([(r.measured_w - r.idle_w) / (r.tdp_w - r.idle_w) for r in rows])
    keep = [0, 1, 2]
    while True:
        coef, *_ = np.linalg.lstsq(a[:, keep], y, rcond=None)
        negative = [k for k, c in zip(keep, coef, strict=True) if k > 0 and c < 0]
        if not negative:
            break
        keep.remove(min(negative, key=lambda k: coef[keep.index(k)]))
    out = [0.0, 0.0, 0.0]
    for k, c in zip(keep, coef, strict=True):
        out[k] = float(c)
    return (out[0], out[1], out[2])


def errors(rows: list[Row], coeffs: tuple[float, float, float]) -> dict[str, tuple[float, ...]]:
    """group → (runs, mean |error| W, mean |error| %, bias %, energy per token: mean |error| %, bias %)."""
    out: dict[str, tuple[float, ...]] = {}
    groups = sorted({r.group for r in rows}, key=lambda g: (g != "fit", g))
    for g in [*groups, "held out: all"]:
        sub = [r for r in rows if r.group == g or (g == "held out: all" and r.group != "fit")]
        if not sub:
            continue
        pred = np.array([r.predicted_w(coeffs) for r in sub])
        meas = np.array([r.measured_w for r in sub])
        rel = (pred - meas) / meas
        j = np.array([p * r.gpu_seconds_per_token for p, r in zip(pred, sub, strict=True)])
        rel_j = j / np.array([r.measured_j for r in sub]) - 1.0
        out[g] = (
            len(sub),
            float(np.mean(np.abs(pred - meas))),
            float(np.mean(np.abs(rel)) * 100),
            float(np.mean(rel) * 100),
            float(np.mean(np.abs(rel_j)) * 100),
            float(np.mean(rel_j) * 100),
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=float, default=1.0, help="scale the assumed prompt lengths")
    args = ap.parse_args(argv)
    rows, skipped = planned_rows(load_catalog(), args.prompts)
    coeffs = fit([r for r in rows if r.group == "fit"])
    print(f"fitted (a, b_c, b_m) = ({coeffs[0]:.3f}, {coeffs[1]:.3f}, {coeffs[2]:.3f}); committed {POWER_COEFFS}")
    print(f"planned {len(rows)} runs; skipped {len(skipped)}")
    for name, c in (("committed", POWER_COEFFS), ("this fit", coeffs)):
        print(f"\n{name} coefficients {tuple(round(v, 3) for v in c)}:")
        print(f"  {'group':40s} {'runs':>5s} {'|err| W':>8s} {'|err| %':>8s} {'bias %':>7s}   J/token: |err| %  bias %")
        for g, (n, w, pct, bias, pj, bj) in errors(rows, c).items():
            print(f"  {g:40s} {n:5.0f} {w:8.1f} {pct:8.1f} {bias:7.1f}            {pj:8.1f} {bj:7.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
