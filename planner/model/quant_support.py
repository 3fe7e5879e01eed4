"""Which formats a serving engine runs on which GPU family, and how (data with sources).

For each weight layout (``planner.model.quantization`` keys), KV-cache dtype and attention math, per GPU family
(from the profile's ``arch``: NVIDIA compute capability, AMD gfx target), what the engine does:

  native       the format's own kernels: the matmuls run at the format's compute dtype (``compute``)
  weight-only  the engine loads the format but computes in 16 bit (a Marlin / Triton W4A16 or W8A16 kernel): the
               weights stream at the format's bytes, the arithmetic runs at the bf16 peak — vLLM says so in its
               log ("Your GPU does not have native support for FP4 computation but FP4 quantization is being
               used. Weight-only FP4 compression will be used leveraging the Marlin kernel", PR #37296)
  refused      the engine will not start: the scenario is refused, naming the families (and GPU profiles) that run it

``kernel_mode`` names the kernel family each component runs as — the quant modes measured kernel tables are keyed
by: bf16, fp8 (per-tensor / per-channel W8A8), fp8_block, int8 (W8A8), w4a16, w4a8, nvfp4, mxfp4.

vLLM (the default table; sources per row):
  fp8 / fp8-channel   W8A8 on Ada and later and on ROCm; Ampere: "FP8 models will run on compute capability > 8.0
                      (Ampere) as weight-only W8A16, utilizing FP8 Marlin" (vllm docs/features/quantization/fp8.md)
  fp8-block           128 × 128 block scales: DeepGEMM/CUTLASS on Hopper and Blackwell, the Triton
                      w8a8_block_fp8_matmul kernel on Ada and ROCm (fp8_utils.py); Ampere through Marlin as fp8
  w8a8 (INT8)         Turing … Hopper; no ROCm kernel ("INT8 (W8A8) … AMD GPU ❌", vLLM's quantization
                      support table, docs/features/quantization/README.md)
  gptq / awq / w4a16  Marlin W4A16 on Ampere and later; "AWQ / GPTQ … AMD GPU ❌" (same table)
  w4a8                CUTLASS W4A8, FP8 activations: "CUTLASS W4A8 requires compute capability of 90 (Hopper)"
                      (kernels/mixed_precision/cutlass.py)
  nvfp4               native W4A4 on Blackwell (SM100/103, and SM120's CUTLASS/FlashInfer FP4 kernels);
                      Ampere/Ada/Hopper: Marlin weight-only (the log line above); no ROCm kernel
  mxfp4               routed experts only: FlashInfer MXFP4 × MXFP8 on Blackwell; Triton matmul_ogs with bf16
                      activations on Hopper ("Hopper GPUs (e.g., H100, H200): Triton matmul_ogs kernel", vLLM blog
                      2025-08-05-gpt-oss); Marlin on Ampere, Ada and SM120 (mxfp4.py "Using Marlin backend");
                      ROCm: gpt-oss "supported on MI300x/MI355x" (same blog), MI355X with its MXFP4 tensor cores
TensorRT-LLM: NVFP4 only on Blackwell ("Note that NVFP4 is only supported on NVIDIA Blackwell", TensorRT-LLM
  deployment guide, quick-start-recipe-for-llama3.3-70b-on-trtllm.md); the rest as vLLM's NVIDIA rows.
SGLang: vLLM's rows (it uses the same kernel families: sgl-kernel CUTLASS FP8/INT8, Marlin, FlashInfer); its own
  matrix was not found.
KV cache (vLLM): fp8 everywhere (on Ampere by software conversion: "FP8 per-tensor KV cache relies on
  software-emulated type conversions on GPUs without native FP8 hardware", vLLM PR #41954);
  int8_per_token_head / fp8_per_token_head: the Triton attention backend only (vLLM PR #38378, merged 2026-03-27;
  run on stock vLLM 0.23.0 in noonghunna/club-3090 discussion #773: the dtype "hands vLLM a candidate list of
  exactly one — ['TRITON_ATTN']"), so not for MLA models (their MLA backends), and from vLLM 0.23; SGLang and
  TensorRT-LLM have no per-token-head KV.
Attention math in FP8 (attn_dtype=fp8): "When using the Flash Attention 3 backend with FP8 KV cache, attention
  operations are also performed in the quantized (FP8) domain … queries are quantized to FP8" (vLLM
  docs/features/quantization/quantized_kvcache.md): needs an fp8 KV cache on Hopper (FlashAttention 3) or
  Blackwell (FlashInfer / TensorRT-LLM FMHA).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.model.engine_versions import engine_name, version_tuple
from planner.model.specs import GPU

Family = Literal["ampere", "ada", "hopper", "blackwell", "blackwell-rtx", "cdna3", "cdna4", "unknown"]
Mode = Literal["native", "weight-only", "refused"]
FAMILY_LABELS: dict[str, str] = {
    "ampere": "Ampere (A100, A10G)",
    "ada": "Ada (L4, L40S, RTX 4090)",
    "hopper": "Hopper (H100, H200, H20, H800)",
    "blackwell": "Blackwell data centre (B200, GB200, B300, GB300)",
    "blackwell-rtx": "Blackwell SM120 (RTX 5090, RTX PRO 6000)",
    "cdna3": "AMD CDNA 3 (MI300X, MI325X)",
    "cdna4": "AMD CDNA 4 (MI355X)",
    "unknown": "an unknown architecture",
}
_ARCH_FAMILY = {
    "sm_80": "ampere",
    "sm_86": "ampere",
    "sm_87": "ampere",
    "sm_89": "ada",
    "sm_90": "hopper",
    "sm_100": "blackwell",
    "sm_103": "blackwell",
    "sm_120": "blackwell-rtx",
    "sm_121": "blackwell-rtx",
    "gfx942": "cdna3",
    "gfx950": "cdna4",
}
NVIDIA = ("ampere", "ada", "hopper", "blackwell", "blackwell-rtx")
AMD = ("cdna3", "cdna4")


def family(gpu: GPU) -> str:
    """The GPU's family for the tables below (``unknown``: a profile without a known ``arch``)."""
    return _ARCH_FAMILY.get(gpu.arch, "unknown")


@dataclass(frozen=True)
class Support:
    """How an engine runs one format on one family (module doc)."""

    mode: Mode
    compute: str = "bf16"  # tensor-core dtype of the arithmetic (native), bf16 for weight-only
    kernel: str = ""
    kernel_mode: str = "bf16"
    reason: str = ""  # refused: why; weight-only: what the engine logs

    @property
    def runs(self) -> bool:
        return self.mode != "refused"


def _rows(modes: dict[tuple[str, ...], Support]) -> dict[str, Support]:
    return {fam: s for fams, s in modes.items() for fam in fams}


_NO_ROCM = "vLLM's quantization support table marks it ❌ for AMD GPUs (docs/features/quantization/README.md)"
_FP8_MARLIN = Support(
    "weight-only",
    kernel="Marlin FP8 (W8A16)",
    kernel_mode="w4a16",
    reason="FP8 computation needs compute capability 8.9; vLLM runs the FP8 weights weight-only (W8A16) with "
    "FP8 Marlin",
)
_NVFP4_MARLIN = Support(
    "weight-only",
    kernel="Marlin NVFP4 (W4A16)",
    kernel_mode="w4a16",
    reason="no native FP4 arithmetic here: vLLM logs 'Weight-only FP4 compression will be used leveraging the Marlin "
    "kernel' and computes in 16 bit (PR #37296)",
)
_MARLIN_W4 = Support("weight-only", kernel="Marlin (W4A16)", kernel_mode="w4a16")

#: vLLM's rows (module doc); the key is the ``quant`` layout.
VLLM_WEIGHTS: dict[str, dict[str, Support]] = {
    "none": _rows({NVIDIA + AMD: Support("native", "bf16", "16-bit GEMM", "bf16")}),
    "fp8": _rows(
        {
            ("ampere",): _FP8_MARLIN,
            ("ada", "hopper", "blackwell", "blackwell-rtx"): Support("native", "fp8", "CUTLASS FP8 W8A8", "fp8"),
            AMD: Support("native", "fp8", "hipBLASLt / AITER FP8 W8A8", "fp8"),
        }
    ),
    "fp8-block": _rows(
        {
            ("ampere",): _FP8_MARLIN,
            ("ada",): Support("native", "fp8", "Triton w8a8_block_fp8_matmul", "fp8_block"),
            ("hopper", "blackwell", "blackwell-rtx"): Support(
                "native", "fp8", "DeepGEMM / CUTLASS block FP8", "fp8_block"
            ),
            AMD: Support("native", "fp8", "AITER / Triton block FP8", "fp8_block"),
        }
    ),
    "w8a8": _rows(
        {
            NVIDIA: Support("native", "int8", "CUTLASS INT8 W8A8", "int8"),
            AMD: Support("refused", reason=f"INT8 W8A8: {_NO_ROCM}"),
        }
    ),
    "w4a16": _rows({NVIDIA: _MARLIN_W4, AMD: Support("refused", reason=f"GPTQ/AWQ/W4A16: {_NO_ROCM}")}),
    "w4a8": _rows(
        {
            ("hopper",): Support("native", "fp8", "CUTLASS W4A8 (FP8 activations)", "w4a8"),
            NVIDIA[:2] + NVIDIA[3:] + AMD: Support(
                "refused", reason="vLLM's CUTLASS W4A8 kernel 'requires compute capability of 90 (Hopper)'"
            ),
        }
    ),
    "nvfp4": _rows(
        {
            ("ampere", "ada", "hopper"): _NVFP4_MARLIN,
            ("blackwell",): Support("native", "fp4", "FlashInfer / CUTLASS NVFP4 W4A4", "nvfp4"),
            ("blackwell-rtx",): Support("native", "fp4", "CUTLASS NVFP4 W4A4 (SM120)", "nvfp4"),
            AMD: Support("refused", reason="vLLM has no NVFP4 kernel for ROCm (ModelOpt FP4: 'Blackwell and later')"),
        }
    ),
    "mxfp4": _rows(
        {
            ("ampere", "ada", "blackwell-rtx"): Support(
                "weight-only",
                kernel="Marlin MXFP4 (W4A16)",
                kernel_mode="w4a16",
                reason="vLLM's mxfp4.py: 'Using Marlin backend'",
            ),
            ("hopper",): Support(
                "weight-only",
                kernel="Triton matmul_ogs (bf16 activations)",
                kernel_mode="mxfp4",
                reason="Hopper has no FP4 arithmetic: the Triton matmul_ogs kernel computes in 16 bit",
            ),
            ("blackwell",): Support("native", "fp8", "FlashInfer MXFP4 × MXFP8 MoE", "mxfp4"),
            ("cdna3",): Support("weight-only", kernel="Triton matmul_ogs (bf16 activations)", kernel_mode="mxfp4"),
            ("cdna4",): Support("native", "fp4", "AITER MXFP4 MoE", "mxfp4"),
        }
    ),
}
for _same, _as in (("fp8-channel", "fp8"), ("gptq", "w4a16"), ("awq", "w4a16")):
    VLLM_WEIGHTS[_same] = VLLM_WEIGHTS[_as]

_TRTLLM_NVFP4 = Support(
    "refused",
    reason="TensorRT-LLM runs NVFP4 only on Blackwell ('Note that NVFP4 is only supported on NVIDIA Blackwell')",
)
#: An engine's departures from vLLM's rows.
OVERRIDES: dict[str, dict[str, dict[str, Support]]] = {
    "trtllm": {"nvfp4": {"ampere": _TRTLLM_NVFP4, "ada": _TRTLLM_NVFP4, "hopper": _TRTLLM_NVFP4}},
}


def weight_support_row(engine: str, quant: str, fam: str) -> Support:
    """How ``engine`` (a link's engine key, any version) runs ``quant`` weights on a GPU of family ``fam``."""
    rule = OVERRIDES.get("trtllm" if engine_name(engine) == "trtllm" else "", {}).get(quant, {}).get(fam)
    if rule is not None:
        return rule
    row = VLLM_WEIGHTS.get(quant, VLLM_WEIGHTS["none"])
    return row.get(fam, Support("refused", reason="no kernel for this architecture"))


def weight_support(engine: str, quant: str, gpu: GPU) -> Support:
    """How ``engine`` runs ``quant`` weights on ``gpu``; a profile of an architecture the table has no row for
    (a measured machine, a user's file without ``arch``) runs a format natively where its peaks have the
    format's compute dtype, else weight-only."""
    fam = family(gpu)
    if fam == "unknown":
        compute = {"fp8": "fp8", "fp8-channel": "fp8", "fp8-block": "fp8", "w8a8": "int8", "nvfp4": "fp4"}.get(quant)
        if compute and compute in gpu.peak_flop_per_s:
            return Support("native", compute, "as the profile's peaks allow", "bf16")
        return Support("weight-only" if quant != "none" else "native", kernel="16-bit arithmetic")
    return weight_support_row(engine, quant, fam)


#: KV dtypes by engine; a version gate (the first release that has it) where one applies.
KV_SINCE: dict[str, dict[str, str]] = {
    "vllm": {"int8_per_token_head": "0.23", "fp8_per_token_head": "0.23"},
}
PER_TOKEN_HEAD = ("int8_per_token_head", "fp8_per_token_head")


def kv_problem(engine: str, engine_version: str, kvdtype: str, is_mla: bool) -> str | None:
    """Why ``engine`` (at ``engine_version``) cannot hold the KV cache in ``kvdtype``, or None."""
    if kvdtype not in PER_TOKEN_HEAD:
        return None
    name = engine_name(engine)
    if name in ("sglang", "trtllm"):
        label = "SGLang" if name == "sglang" else "TensorRT-LLM"
        return f"kvdtype={kvdtype}: {label} has no per-token-head KV cache (vLLM's Triton attention backend has it)"
    if is_mla:
        return (
            f"kvdtype={kvdtype}: vLLM implements per-token-head KV in its Triton attention backend only, which does "
            "not "
            "serve MLA models; use kvdtype=fp8"
        )
    since = KV_SINCE["vllm"][kvdtype]
    if version_tuple(engine_version) < version_tuple(since):
        return (
            f"kvdtype={kvdtype}: vLLM has it from {since} (PR #38378; run on stock 0.23.0) — the plan's vLLM is "
            f"{engine_version}; pick a newer engine version or kvdtype=fp8"
        )
    return None


ATTENTION_FP8_FAMILIES = ("hopper", "blackwell")


def attention_problem(attn_dtype: str, kvdtype: str, gpu: GPU) -> str | None:
    """Why attention cannot run in ``attn_dtype`` here (module doc), or None."""
    if attn_dtype != "fp8":
        return None
    if kvdtype != "fp8":
        return f"attn_dtype=fp8: FP8 attention reads an fp8 KV cache (kvdtype={kvdtype}); set kvdtype=fp8"
    if family(gpu) not in ATTENTION_FP8_FAMILIES:
        return (
            "attn_dtype=fp8: FP8 attention kernels (FlashAttention 3, FlashInfer) run on Hopper and Blackwell "
            "data-centre "
            f"GPUs, not on {FAMILY_LABELS[family(gpu)]}"
        )
    return None


def mxfp4_padding(engine: str, gpu: GPU) -> tuple[int, int]:
    """(hidden multiple, per-rank expert-width multiple) MXFP4 experts are allocated at (vLLM's
    ``mxfp4_round_up_hidden_size_and_intermediate_size``, fused_moe/oracle/mxfp4.py; SGLang's mxfp4.py alike):
    Marlin 256 / 128, FlashInfer TRT-LLM (Blackwell) 256 / 256, ROCm 256 / 256, the Triton matmul_ogs backend
    (Hopper) 256 / 64 — its 64 is the code's, its hidden 256 is inferred: vLLM 0.11.0 logged 13.47 and 64.38 GiB
    loading gpt-oss-20b / -120b on one H100 (llm-d-planner docs/empirical-vllm-memory-results.md), the checkpoints'
    tensors hold 12.80 / 60.71 GiB, and a hidden size padded 2,880 → 3,072 gives 13.45 / 64.49.  TensorRT-LLM's
    allocation was not read: (1, 1)."""
    if engine_name(engine) == "trtllm":
        return 1, 1
    fam = family(gpu)
    if fam == "hopper":
        return 256, 64
    if fam == "blackwell" or fam in AMD:
        return 256, 256
    if fam in ("ampere", "ada", "blackwell-rtx"):
        return 256, 128
    return 1, 64
