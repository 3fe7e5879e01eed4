"""NVIDIA AIConfigurator's own estimate of the same rows, side by side (an optional extra: ``pip install
'kvplan[aic]'``, or any interpreter that has ``aiconfigurator`` 0.12, named with ``--aic-python``).

AIConfigurator composes step times from the same measured tables kvplan distils; running its estimator on
the rows kvplan predicts makes the comparison a measurement, not a claim.  Each row is one
``aiconfigurator.cli.api.cli_estimate`` call in ``mode="agg"`` (aggregated in-flight batching) at the
settings kvplan's scenario uses: the GPU, engine and version of the tables, batch = kvplan's steady-state
batch, ctx_tokens = its step budget, tp / attention-DP / MoE EP, the GEMM, MoE and KV dtypes and the KV
memory fraction; its ``tokens/s/gpu`` is set beside the measurement (and its ``tpot`` for TPOT rows).  The
calls run in a child process (AIConfigurator loads its database once, ≈ 15 s, then ≈ 3.5 s a row on this
machine), one JSON request per line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

#: kvplan preset → the model id AIConfigurator 0.12 ships a config for (its model_configs/).
AIC_MODEL = {
    "llama-3.1-8b": "meta-llama/Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama/Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama/Meta-Llama-3.1-405B",
    "llama-4-scout-17b-16e": "meta-llama/Llama-4-Scout-17B-16E-Instruct",
    "llama-4-maverick-17b-128e": "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
    "qwen3-235b-a22b": "Qwen/Qwen3-235B-A22B",
    "qwen3-30b-a3b": "Qwen/Qwen3-30B-A3B",
    "qwen3-32b": "Qwen/Qwen3-32B",
    "qwen3-8b": "Qwen/Qwen3-8B",
    "gpt-oss-120b": "openai/gpt-oss-120b",
    "gpt-oss-20b": "openai/gpt-oss-20b",
    "deepseek-r1": "deepseek-ai/DeepSeek-R1",
    "mixtral-8x7b": "mistralai/Mixtral-8x7B-v0.1",
}
AIC_SYSTEM = {
    "h100-sxm": "h100_sxm",
    "h200": "h200_sxm",
    "b200": "b200_sxm",
    "b300": "b300_sxm",
    "gb200": "gb200",
    "a100-80gb-sxm": "a100_sxm",
    "l40s": "l40s",
}

WORKER = """
import json, logging, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from aiconfigurator.cli.api import cli_estimate
for line in sys.stdin:
    req = json.loads(line)
    try:
        d = cli_estimate(req.pop("model"), req.pop("system"), **req).get()
        out = {"tokens_per_s_per_gpu": float(d["tokens/s/gpu"]), "tpot_s": float(d["tpot"]) / 1e3}
    except Exception as exc:  # an AIC refusal is reported per row
        out = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    print(json.dumps(out), flush=True)
"""


def available(python: str) -> bool:
    """``python`` can import aiconfigurator."""
    p = subprocess.run([python, "-c", "import aiconfigurator"], capture_output=True, text=True)
    return p.returncode == 0


def request(case, batch: int, moe: bool) -> dict | None:
    """The ``cli_estimate`` arguments of one ``modern.Case`` at kvplan's steady batch (None: AIConfigurator has no
    such model or GPU)."""
    s = case.scenario
    if s.model not in AIC_MODEL or s.gpu not in AIC_SYSTEM:
        return None
    k = case.row.engine_profile or ""
    backend = k.split("@")[0]
    gemm = {"bf16": "bfloat16", "fp8": "fp8_block" if s.quant == "fp8-block" else "fp8", "fp4": "nvfp4"}[s.wdtype]
    moe = "w4a16_mxfp4" if s.quant == "mxfp4" else gemm
    if s.quant == "mxfp4":
        gemm = "bfloat16"
    req = dict(
        model=AIC_MODEL[s.model],
        system=AIC_SYSTEM[s.gpu],
        mode="agg",
        backend_name=backend,
        isl=int(s.prompt),
        osl=int(s.output),
        batch_size=int(batch),
        ctx_tokens=int(s.chunk),
        tp_size=int(s.tp),
        pp_size=int(s.pp),
        attention_dp_size=int(s.dp),
        gemm_quant_mode=gemm,
        kvcache_quant_mode="fp8" if s.kvdtype == "fp8" else "bfloat16",
        fmha_quant_mode="bfloat16",
        free_gpu_memory_fraction=float(s.mem_util),
    )
    if moe:
        req.update(moe_quant_mode=moe, moe_tp_size=int(s.tp * s.dp // max(s.ep, 1)), moe_ep_size=int(s.ep))
    return req


def estimate(python: str, requests: Sequence[dict]) -> list[dict]:
    """AIConfigurator's answer to each request, in order (one child process)."""
    lines = "\n".join(json.dumps(r) for r in requests) + "\n"
    p = subprocess.run([python, "-c", WORKER], input=lines, capture_output=True, text=True, check=False)
    out = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if len(out) != len(requests):
        raise RuntimeError(f"aiconfigurator worker failed: {p.stderr[-400:]}")
    return out


def default_python() -> str:
    return sys.executable
