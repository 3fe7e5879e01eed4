"""The closed vocabularies of formats (one home, so specs, presets, scenarios and the engine agree).

Weight dtypes (``Dtype``), KV-cache dtypes (``KvDtype``: vLLM's ``--kv-cache-dtype`` names where vLLM has them),
tensor-core compute dtypes (``ComputeDtype``), weight quantisation layouts (``QuantKey``;
``planner.model.quantization`` holds their byte layouts), the attention math dtype and the names of the
linear matrices a checkpoint may leave in 16 bit (the ends of its module names).
"""

from __future__ import annotations

from typing import Literal

Dtype = Literal["bf16", "fp16", "fp8", "int8", "int4", "fp4"]
#: int8 / fp8 per-tensor (one scale per layer), and vLLM's per-token-head INT8/FP8 (a scale per token and head,
#: stored inline: vLLM PR #38378, the Triton attention backend).
KvDtype = Literal["bf16", "fp16", "fp8", "int8", "int8_per_token_head", "fp8_per_token_head"]
KV_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "int8", "int8_per_token_head", "fp8_per_token_head")
ComputeDtype = Literal["bf16", "fp8", "int8", "fp4"]
#: A weight layout ('' = the usual one of the weight dtype, or the checkpoint's).
QuantKey = Literal[
    "", "none", "fp8", "fp8-channel", "fp8-block", "w8a8", "gptq", "awq", "w4a16", "w4a8", "nvfp4", "mxfp4"
]
#: A stored layout ('none' = 16 bit).
StoredQuant = Literal[
    "none", "fp8", "fp8-channel", "fp8-block", "w8a8", "gptq", "awq", "w4a16", "w4a8", "nvfp4", "mxfp4"
]
#: The math of attention: 16-bit (the default every engine runs) or FP8 (FlashAttention-3 / FlashInfer with an FP8 KV
#: cache: queries quantised too).
AttentionDtype = Literal["", "bf16", "fp8"]
#: The linear matrices ``planner.model.quantization.linear_matrices`` names (a checkpoint's ``keep_16bit``).
MATRIX_NAMES: tuple[str, ...] = (
    "qkv_proj",
    "q_proj",
    "q_a_proj",
    "q_b_proj",
    "kv_a_proj_with_mqa",
    "kv_b_proj",
    "o_proj",
    "gate_up_proj",
    "down_proj",
    "shared_experts.gate_up_proj",
    "shared_experts.down_proj",
    "experts.gate_up_proj",
    "experts.down_proj",
)
