"""A model preset's published checkpoints: which repository, and in which format each part of it is stored.

A preset (``model_presets/*.toml``) lists ``[[checkpoints]]``; the first is the preset's default (what
``model=<preset>`` plans with: the checkpoint its publisher ships), the others are variants a link picks with
``ckpt=<key>`` (an NVIDIA NVFP4 or FP8 conversion, a RedHat FP8-dynamic one).  Each names, from the checkpoint's own
``config.json`` ``quantization_config`` (or ModelOpt ``hf_quant_config.json``), the layout of its attention
projections, dense MLPs (shared experts included) and routed experts, the matrices it leaves in 16 bit
(``modules_to_not_convert`` / ``exclude_modules``), the KV-cache dtype it ships scales for, and the source — and,
where one is published, the weight memory a serving engine logged loading it (tests hold the plan to it).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.model.dtypes import MATRIX_NAMES, KvDtype, StoredQuant

CHECKPOINT_KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,31}$"
#: Hugging Face ``org/name``.
REPO_PATTERN = r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$"


class Checkpoint(BaseModel):
    """One published checkpoint of a preset (module doc)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str = Field(pattern=CHECKPOINT_KEY_PATTERN, description="the link value that selects it (ckpt=…)")
    repo: str = Field(pattern=REPO_PATTERN, description="Hugging Face repository id")
    label: str = Field(default="", max_length=200)
    attention: StoredQuant = Field(default="none", description="layout of the attention projections")
    mlp: StoredQuant = Field(default="none", description="layout of the dense MLPs and shared experts")
    experts: StoredQuant = Field(default="none", description="layout of the routed experts")
    keep_16bit: tuple[str, ...] = Field(default=(), description="matrices the checkpoint leaves in 16 bit")
    group: int = Field(default=128, ge=0, le=1024, description="GPTQ/AWQ/W4A16/W4A8 group size (0: per channel)")
    kvdtype: KvDtype = Field(default="bf16", description="KV-cache dtype the checkpoint ships scales for")
    mtp_bf16: bool = Field(
        default=False, description="the multi-token-prediction layers are left in 16 bit (excluded from quantisation)"
    )
    gpus: str = Field(default="", max_length=200, description="hardware the card names, e.g. 'Blackwell'")
    quantization_config: str = Field(default="", max_length=4000, description="the config's text, verbatim")
    source: str = Field(min_length=1, max_length=2000)
    weights_gib_published: float | None = Field(
        default=None, gt=0, le=100_000, description="weight memory an engine logged loading it, GiB per GPU"
    )
    weights_tp: int = Field(default=1, ge=1, le=1024, description="the tensor-parallel size of that log")
    weights_source: str = Field(default="", max_length=2000)

    @model_validator(mode="after")
    def _consistent(self) -> Checkpoint:
        for part in ("attention", "mlp"):
            if getattr(self, part) == "mxfp4":
                raise ValueError(
                    f"{part}: mxfp4 is a routed-experts format (vLLM's Mxfp4Config quantises FusedMoE only)"
                )
        unknown = [n for n in self.keep_16bit if n not in MATRIX_NAMES]
        if unknown:
            raise ValueError(f"keep_16bit: unknown matrix {', '.join(unknown)}; known: {', '.join(MATRIX_NAMES)}")
        if self.weights_gib_published is not None and not self.weights_source:
            raise ValueError("weights_gib_published needs weights_source")
        return self

    @property
    def quantised(self) -> bool:
        return any(getattr(self, p) != "none" for p in ("attention", "mlp", "experts"))
