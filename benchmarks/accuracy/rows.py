"""Published measurements: the row schema, the loader, and the mapping of a row's model and GPU
names to kvplan's catalog keys.

Each row carries its source (repository@commit:path or URL) and the verbatim quote of the
number.  Rows we add ourselves go into the same file with the same fields.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DATA = Path(__file__).resolve().parent.parent / "data" / "published-serving.json"

#: the categories the report predicts; a row of another category (e.g. prefill_throughput) loads and is skipped
CATEGORIES = ("kv_capacity", "ttft", "tpot", "throughput", "e2e_latency")
#: 'fit': fitted by benchmarks/fit_timing.py (and predicted without its own source_group in the
#: held-out report); 'held_out': never fitted, predicted by the shipped profiles.
FitRole = Literal["fit", "held_out"]


class Row(BaseModel):
    """One published, measured number (SI units in ``measured``)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    id: str
    category: str = Field(min_length=1)
    engine: str
    source: str = Field(min_length=1)
    quote: str = Field(min_length=1)
    model: str
    gpu: str
    tp: int = Field(ge=1)
    wdtype: str
    kvdtype: str
    quantization: str | None = None
    batch: int | None = None
    prompt: int | None = None
    output: int | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    mem_util: float | None = None
    metric: str
    measured: float
    notes: str = ""
    engine_key: str | None = None  # the engine group the efficiency fit gives the row
    source_group: str | None = None  # one publication: the unit left out in leave-one-source-out
    fit_role: FitRole = "held_out"


def load_rows(path: Path = DATA) -> list[Row]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Row.model_validate(r) for r in data["rows"]]


#: A row's model (Hugging Face id or the table's name) → kvplan preset key and weight dtype override.
#: Llama-3.3-70B has Llama-3.1-70B's shape; the RedHatAI checkpoints are that shape quantised.
MODEL_KEYS: dict[str, str] = {
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Qwen/Qwen2.5-7B-Instruct": "qwen2.5-7b",
    "Qwen/Qwen2.5-72B-Instruct": "qwen2.5-72b",
    "RedHatAI/Llama-3.3-70B-Instruct-fp8-dynamic": "llama-3.1-70b",
    "mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
    "google/gemma-2-9b-it": "gemma-2-9b",
    "google/gemma-2-27b-it": "gemma-2-27b",
    "RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16": "llama-3.1-8b",
    "RedHatAI/Qwen2.5-7B-Instruct-quantized.w8a8": "qwen2.5-7b",
    "meta-llama/Llama-2-7b-hf": "llama-2-7b",
    "meta-llama/Llama-2-7b-chat-hf": "llama-2-7b",
    "meta-llama/Llama-2-13b-hf": "llama-2-13b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "meta-llama/Llama-2-70b-chat-hf": "llama-2-70b",
    "meta-llama/Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-8B": "llama-3.1-8b",
    "meta-llama/Meta-Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Meta-Llama-3.1-405B": "llama-3.1-405b",
    "mistralai/Mixtral-8x7B-v0.1": "mixtral-8x7b",
}


#: A model name, lower-cased with '_' and ' ' read as '-', → preset key: the shape is what matters
#: (Llama-3 and 3.3 70B have Llama-3.1-70B's shape; DeepSeek-R1 has DeepSeek-V3's).
SHAPE_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"llama-?3(\.[0-9])?-(70b)", "llama-3.1-70b"),
    (r"llama-?3(\.[0-9])?-(8b)", "llama-3.1-8b"),
    (r"llama-?3\.1-405b", "llama-3.1-405b"),
    (r"llama-?3\.2-1b", "llama-3.2-1b"),
    (r"llama-?2-(7b|13b|70b)", "llama-2-{0}"),
    (r"mixtral-8x7b", "mixtral-8x7b"),
    (r"mistral-7b", "mistral-7b"),
    (r"qwen2\.5-(0\.5b|7b|72b)", "qwen2.5-{0}"),
    (r"gemma-2-(9b|27b)", "gemma-2-{0}"),
    (r"deepseek-(v3|r1)", "deepseek-v3"),
)


def model_key(row: Row) -> str:
    if row.model in MODEL_KEYS:
        return MODEL_KEYS[row.model]
    norm = re.sub(r"[_ ]", "-", row.model.lower())
    for pattern, key in SHAPE_PATTERNS:
        m = re.search(pattern, norm)
        if m:
            return key.format(m.group(m.lastindex or 0)) if "{0}" in key else key
    name = row.model.lower()
    for needle, key in (
        ("mixtral 8x7b", "mixtral-8x7b"),
        ("mistral 7b", "mistral-7b"),
        ("llama2-70b", "llama-2-70b"),
        ("llama2-7b", "llama-2-7b"),
    ):
        if needle in name:
            return key
    raise KeyError(f"{row.id}: no preset for model {row.model!r}")


#: A row's engine_key → the shipped engine profile that describes it: these rows (2023–24 engines, the fit of
#: ``[timing]``) are the versions the fitted roofline describes, never the newest version's measured kernels.
ENGINE_PROFILE = {"vllm": "vllm@0.19", "sglang": "sglang@0.5.23", "trtllm": "trtllm@0.9"}


def engine_key(row: Row) -> str:
    """The row's engine group: its ``engine_key``, else read from the engine's name (an engine that
    is not named — NVIDIA NIM does not say which it runs — is the default, vLLM)."""
    if row.engine_key:
        return row.engine_key
    name = row.engine.lower()
    for needle, key in (("tensorrt", "trtllm"), ("sglang", "sglang"), ("lmdeploy", "lmdeploy")):
        if needle in name:
            return key
    return "gpt-fast" if "gpt-fast" in name else "vllm"


def dtype_key(text: str) -> str:
    """A row's dtype text ("fp8 (e4m3)", "int8 (weight-only)", "nvfp4 MoE / fp8") → the kvplan dtype."""
    first = text.split()[0].split("/")[0].lower()
    return {"nvfp4": "fp4", "mxfp4": "fp4", "float16": "fp16", "bfloat16": "bf16"}.get(first, first)


def gpu_key(row: Row) -> str:
    name = row.gpu.lower()
    for needle, key in (
        ("h100", "h100-sxm"),
        ("h200", "h200"),
        ("l40s", "l40s"),
        ("a100", "a100-80gb-sxm"),
        ("b200", "b200"),
        ("mi300x", "mi300x"),
    ):
        if needle in name:
            return key
    raise KeyError(f"{row.id}: no profile for GPU {row.gpu!r}")
