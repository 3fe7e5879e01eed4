"""Validated, frozen input models: GPU, model shape, and the user's Scenario.

Every field has bounds.  Inside the engine the values are trusted; these
models are the boundary where URLs, CLI arguments, uploaded files and profile
files are checked.  Units are in every field name, SI inside.
"""

from __future__ import annotations

import re
from typing import cast

from pydantic import BaseModel, ConfigDict, Field, model_validator

from planner.format import fmt_bytes
from planner.model.checkpoint_spec import Checkpoint
from planner.model.dtypes import ComputeDtype, Dtype, KvDtype  # noqa: F401  (re-exported: the schema's types)
from planner.model.gpu_generations import ARCH_PATTERN, GENERATION_ARCHS, KNOWN_ARCHS, KNOWN_GENERATIONS
from planner.model.listing_order import GENERATION_ORDER, MODEL_FAMILIES, OTHER_FAMILY, VENDOR_ORDER
from planner.units import GB, MS_PER_S, PETA, TERA, US_PER_S, GiB, MiB, TiB

FROZEN = ConfigDict(frozen=True, extra="forbid")

#: A catalog key (GPU profile, model preset, measured profile): the link value and the file stem.
KEY_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,63}$"
KEY_RE = re.compile(KEY_PATTERN)
KEY_RULE = "a lower-case key of letters, digits, '.', '_' or '-' (≤ 64 chars)"

#: The largest board power a profile may state (a GB300 is 1,400 W, an MI355X 1,400 W).
MAX_BOARD_POWER_W = 5000.0


#: Seconds per microsecond: the same double as the literal 1e-6, so profile values stay bit-identical.
_S_PER_US = 1 / US_PER_S
#: A profile file that does not say (a measured profile, a user's file): an HGX-class node of 8 GPUs with one
#: 400 Gb/s InfiniBand NIC per GPU (NVIDIA DGX H100: 8 × ConnectX-7 400 Gb/s; nccl-tests#290: "For NDR @ 400Gbps you
#: should see 46-48GB/s per NIC"); the inter-node latency floor ≈ 45 µs (nccl#1244: a 4-byte all-reduce over
#: 2 × 8 H20 with NDR takes 47.5 µs).  Every shipped profile states its own values and their source.
DEFAULT_GPUS_PER_NODE = 8
MAX_GPUS_PER_NODE = 576
DEFAULT_SCALE_OUT_GB_PER_S = 50.0
DEFAULT_SCALE_OUT_LATENCY_US = 45.0


class GPU(BaseModel):
    """One accelerator, SI units.  Built from a ``GpuProfileFile``."""

    model_config = FROZEN

    key: str = Field(min_length=1, max_length=64, description="file stem, used in links")
    name: str = Field(min_length=1, max_length=120)
    vendor: str = Field(min_length=1, max_length=40)
    generation: str = Field(default="", max_length=40, description="architecture generation (Hopper, CDNA 3 …)")
    memory_bytes: float = Field(gt=0, le=10 * TiB, description="HBM/GDDR capacity (datasheet)")
    memory_datasheet: str = Field(
        default="", max_length=80, description="the capacity as the datasheet prints it: '80 GB HBM3'"
    )
    memory_reported_bytes: float | None = Field(
        default=None, gt=0, le=10 * TiB, description="total memory the driver reports (what engines size from)"
    )
    memory_smi_bytes: float | None = Field(
        default=None, gt=0, le=10 * TiB, description="nvidia-smi's memory.total (what SGLang sizes its defaults from)"
    )
    compute_capability: str = Field(default="", max_length=8, description="CUDA compute capability ('' = not CUDA)")
    memory_bandwidth_bytes_per_s: float = Field(gt=0, le=100 * TERA)
    peak_flop_per_s: dict[ComputeDtype, float] = Field(description="dense (not 2:4-sparse) peak per compute dtype")
    interconnect_bytes_per_s: float = Field(
        gt=0, le=10 * TERA, description="GPU-to-GPU bandwidth per GPU, one direction"
    )
    collective_latency_s: float = Field(ge=0, le=1 / MS_PER_S, description="fixed cost per all-reduce")
    price_per_gpu_hour_usd: float = Field(ge=0, le=1000)
    source: str = Field(min_length=1)
    calibrated: bool = False
    compute_memory_overlap: float = Field(
        default=1.0,
        ge=-1,
        le=1,
        description="o in max(c, m) + (1 − o)·min(c, m) per operator group: 1 = roofline (full overlap)",
    )
    attention_compute_frac: float = Field(
        default=1.0, gt=0, le=1, description="share of the matmul peak the attention kernels reach"
    )
    attention_bandwidth_frac: float = Field(
        default=1.0, gt=0, le=1, description="share of the weight-streaming bandwidth the attention kernels reach"
    )
    # multi-node layouts (planner/engine/parallel.py; docs/model.md "Parallelism")
    gpus_per_node: int = Field(
        default=DEFAULT_GPUS_PER_NODE, ge=1, le=MAX_GPUS_PER_NODE, description="GPUs sharing the scale-up link"
    )
    scale_out_bytes_per_s: float = Field(
        default=DEFAULT_SCALE_OUT_GB_PER_S * GB, gt=0, le=10 * TERA, description="network per GPU, one direction"
    )
    scale_out_latency_s: float = Field(
        default=DEFAULT_SCALE_OUT_LATENCY_US * _S_PER_US,
        ge=0,
        le=1 / MS_PER_S,
        description="fixed cost per inter-node collective",
    )
    arch: str = Field(default="", max_length=16, description="compute architecture (sm_90, sm_100, gfx942 …)")
    kernel_ceiling: str = ""  # GpuProfileFile.kernel_ceiling ('' = none)
    kernel_ceiling_source: str = ""
    kernel_ceiling_slack: float = 1.0  # the ceiling's bandwidth ÷ this GPU's where larger (catalog; kernels/store.py)
    # power (planner/engine/power.py; docs/model.md "Power and energy")
    tdp_w: float | None = Field(default=None, gt=0, le=MAX_BOARD_POWER_W, description="board power limit (TDP/TGP/TBP)")
    idle_w: float | None = Field(default=None, ge=0, le=MAX_BOARD_POWER_W, description="idle board power")
    server_power_w_per_gpu: float | None = Field(
        default=None, gt=0, le=10 * MAX_BOARD_POWER_W, description="a whole server's (or tray's) max power ÷ its GPUs"
    )
    power_source: str = Field(default="", max_length=4000)

    @property
    def memory_words(self) -> str:
        """'80 GB HBM3 · 79.2 GiB visible to the driver': the datasheet's capacity as printed and what the
        driver reports (what a serving engine sizes from)."""
        printed = self.memory_datasheet or fmt_bytes(self.memory_bytes)
        if self.memory_reported_bytes is None:
            return printed
        return f"{printed} · {fmt_bytes(self.memory_reported_bytes)} visible to the driver"

    @property
    def group(self) -> str:
        """The picker group: "vendor · generation" (measured profiles: "Measured")."""
        if self.calibrated:
            return "Measured"
        return f"{self.vendor} · {self.generation}" if self.generation else self.vendor

    @property
    def group_order(self) -> tuple[int, int, str, int, str]:
        """Sort key: measured last, then vendor (NVIDIA, AMD, others), generation oldest first, name."""
        vendor = VENDOR_ORDER.index(self.vendor) if self.vendor in VENDOR_ORDER else len(VENDOR_ORDER)
        rank = GENERATION_ORDER.index(self.generation) if self.generation in GENERATION_ORDER else len(GENERATION_ORDER)
        return (int(self.calibrated), vendor, self.vendor, rank, self.name)

    @property
    def cuda_major(self) -> int:
        """The compute capability's major version (9 Hopper, 10 datacenter Blackwell, 12 RTX Blackwell); 0 off CUDA."""
        return int(self.compute_capability.split(".")[0]) if self.compute_capability else 0

    def peak_for(self, compute_dtype: str) -> float:
        """Dense peak for ``compute_dtype``; falls back to bf16 when the chip lacks it."""
        # A lookup by any name is safe: an unknown dtype is simply absent.
        peaks = cast(dict[str, float], self.peak_flop_per_s)
        return peaks.get(compute_dtype, peaks["bf16"])

    @model_validator(mode="after")
    def _needs_bf16(self) -> GPU:
        if "bf16" not in self.peak_flop_per_s:
            raise ValueError("peak_flop_per_s must include bf16")
        for dt, v in self.peak_flop_per_s.items():
            if not (0 < v <= 50 * PETA):
                raise ValueError(f"peak_flop_per_s[{dt}]={v} outside (0, 5e16]")
        return self


#: Physical lower bounds of a profile (the smallest real device it could describe — a CPU core
#: measured by the benchmark is above all of them): a smaller value is a typo or an attack
#: (1e-300 TFLOP/s made every time infinite), not a device.
MIN_MEMORY_GB = 0.1
MIN_BANDWIDTH_TB_PER_S = 1e-4  # 0.1 GB/s
MIN_TFLOPS = 1e-4  # 0.1 GFLOP/s
MIN_INTERCONNECT_GB_PER_S = 0.01
#: A CUDA compute capability as NVIDIA writes it: major.minor.
CAPABILITY_PATTERN = r"^[0-9]{1,2}\.[0-9]$"


class GpuProfileFile(BaseModel):
    """Schema of ``hardware_profiles/*.toml`` (human units, unit in every name).

    Capacity may be given in decimal GB *or* binary GiB, never both, so the
    unit is always explicit.  TFLOP/s figures are **dense**: a datasheet's
    "with sparsity" figure must be halved before it is written here.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, max_length=120)
    vendor: str = Field(min_length=1, max_length=40)
    generation: str | None = Field(
        default=None,
        min_length=1,
        max_length=40,
        description="architecture generation, for grouping (Hopper, Blackwell, CDNA 3 …)",
    )
    memory_capacity_gb: float | None = Field(default=None, ge=MIN_MEMORY_GB, le=10_000)
    memory_capacity_gib: float | None = Field(default=None, ge=MIN_MEMORY_GB, le=10_000)
    memory_type: str | None = Field(
        default=None, max_length=40, description="the memory as the datasheet names it: HBM3, HBM3e, GDDR6 …"
    )
    memory_reported_gib: float | None = Field(
        default=None,
        gt=0,
        le=10_000,
        description="total device memory as the driver reports it (torch.cuda.get_device_properties().total_memory), "
        "GiB: what a serving engine sizes from; the datasheet capacity stays as documentation",
    )
    memory_reported_source: str | None = Field(
        default=None, max_length=500, description="where the reported figure comes from"
    )
    memory_smi_mib: float | None = Field(
        default=None,
        gt=0,
        le=10_000_000,
        description="nvidia-smi --query-gpu=memory.total, MiB: what SGLang sizes chunked_prefill_size, its CUDA-graph "
        "batch and mem_fraction_static from (arg_groups/memory_hook.py); absent: the reported total stands in",
    )
    compute_capability: str | None = Field(
        default=None,
        pattern=CAPABILITY_PATTERN,
        description="CUDA compute capability (9.0 Hopper, 10.0 B200, 12.0 RTX Blackwell): vLLM's and SGLang's "
        "attention-backend choice keys on its major; absent on non-CUDA devices",
    )
    memory_bandwidth_tb_per_s: float = Field(ge=MIN_BANDWIDTH_TB_PER_S, le=100)
    dense_tflops_bf16: float = Field(ge=MIN_TFLOPS, le=50_000)
    dense_tflops_fp8: float | None = Field(default=None, ge=MIN_TFLOPS, le=50_000)
    dense_tops_int8: float | None = Field(default=None, ge=MIN_TFLOPS, le=50_000)
    dense_tflops_fp4: float | None = Field(default=None, ge=MIN_TFLOPS, le=50_000)
    interconnect_gb_per_s: float = Field(ge=MIN_INTERCONNECT_GB_PER_S, le=10_000, description="per GPU, one direction")
    interconnect_name: str = Field(default="", max_length=80)
    collective_latency_us: float = Field(default=8.0, ge=0, le=1000)
    price_usd_per_gpu_hour: float = Field(ge=0, le=1000)
    price_source: str = Field(default="", max_length=500)
    source: str = Field(min_length=1, max_length=2000)
    notes: str = Field(default="", max_length=4000)
    calibrated: bool = False
    # Measured refinements of the roofline (``python -m planner bench`` writes them; datasheet
    # profiles leave the defaults, the plain roofline).  docs/model.md §4.
    compute_memory_overlap: float = Field(
        default=1.0,
        ge=-1,
        le=1,
        description="per operator group, time = max(c, m) + (1 − o)·min(c, m): 1 full overlap (roofline), "
        "0 none (c + m), below 0 slower than back to back",
    )
    attention_compute_frac: float = Field(default=1.0, gt=0, le=1, description="attention FLOP/s ÷ matmul peak")
    attention_bandwidth_frac: float = Field(
        default=1.0, gt=0, le=1, description="attention KV bytes/s ÷ weight-streaming bytes/s"
    )
    # multi-node layouts (docs/model.md "Parallelism"): the scale-up domain and the network beyond it;
    # None (a measured profile, a user's file): the DEFAULT_* node above
    gpus_per_node: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GPUS_PER_NODE,
        description="GPUs that share the scale-up link (interconnect_gb_per_s): 8 in an HGX/DGX node, 72 in a "
        "GB200 NVL72 NVLink domain",
    )
    scale_out_gb_per_s: float | None = Field(
        default=None,
        ge=MIN_INTERCONNECT_GB_PER_S,
        le=10_000,
        description="network bandwidth per GPU beyond its node, one direction (400 Gb/s NDR = 50 GB/s)",
    )
    scale_out_latency_us: float | None = Field(
        default=None, ge=0, le=1000, description="fixed cost of one inter-node collective"
    )
    scale_out_name: str | None = Field(
        default=None, max_length=120, description="the network, e.g. 8 × ConnectX-7 400 Gb/s"
    )
    scale_out_source: str | None = Field(
        default=None, max_length=2000, description="where the node and network figures come from"
    )
    arch: str | None = Field(
        default=None,
        pattern=ARCH_PATTERN,
        description="compute architecture: sm_80 … sm_120 (NVIDIA compute capability), gfx942/gfx950 (AMD); decides "
        "which quantisation kernels an engine runs (planner/model/quant_support.py)",
    )
    tdp_w: float | None = Field(
        default=None, gt=0, le=MAX_BOARD_POWER_W, description="board power limit, W (TDP / TGP / TBP as published)"
    )
    tdp_source: str | None = Field(default=None, max_length=2000)
    # a profile with this GPU's compute, no more bandwidth: each kernel here is at most its (kernels/store.py)
    kernel_ceiling: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,63}$")
    kernel_ceiling_source: str | None = Field(default=None, max_length=2000)
    idle_w: float | None = Field(default=None, ge=0, le=MAX_BOARD_POWER_W, description="idle board power, W")
    idle_source: str | None = Field(default=None, max_length=2000)
    server_power_w_per_gpu: float | None = Field(  # GPUs, CPUs, NICs, fans
        default=None, gt=0, le=10 * MAX_BOARD_POWER_W, description="a server's (or tray's) maximum power ÷ its GPUs, W"
    )
    server_power_source: str | None = Field(default=None, max_length=2000)

    @model_validator(mode="after")
    def _one_capacity_unit(self) -> GpuProfileFile:
        if (self.memory_capacity_gb is None) == (self.memory_capacity_gib is None):
            raise ValueError("give exactly one of memory_capacity_gb or memory_capacity_gib")
        for value, source in (
            ("tdp_w", "tdp_source"),
            ("idle_w", "idle_source"),
            ("kernel_ceiling", "kernel_ceiling_source"),
        ):
            if getattr(self, value) is not None and not getattr(self, source):
                raise ValueError(f"{value} needs {source} (every datasheet figure names its source)")
        if self.server_power_w_per_gpu is not None and not self.server_power_source:
            raise ValueError("server_power_w_per_gpu needs server_power_source")
        if self.idle_w is not None and self.tdp_w is not None and self.idle_w >= self.tdp_w:
            raise ValueError(f"idle_w={self.idle_w} must be below tdp_w={self.tdp_w}")
        if (
            self.server_power_w_per_gpu is not None
            and self.tdp_w is not None
            and self.server_power_w_per_gpu < self.tdp_w
        ):
            raise ValueError("server_power_w_per_gpu must be at least tdp_w (the server holds the GPU)")
        return self

    @property
    def memory_datasheet(self) -> str:
        """'80 GB HBM3': the capacity in the unit the file gives it, and the memory's name."""
        size = (
            f"{self.memory_capacity_gb:g} GB"
            if self.memory_capacity_gb is not None
            else f"{self.memory_capacity_gib:g} GiB"
        )
        return f"{size} {self.memory_type or ''}".strip()

    def _power_source(self) -> str:
        parts = [("TDP", self.tdp_source), ("idle", self.idle_source), ("server", self.server_power_source)]
        return "; ".join(f"{name}: {text}" for name, text in parts if text)

    def to_gpu(self, key: str) -> GPU:
        mem = (
            self.memory_capacity_gb * GB if self.memory_capacity_gb is not None else self.memory_capacity_gib * GiB  # type: ignore[operator]
        )
        peaks: dict[ComputeDtype, float] = {"bf16": self.dense_tflops_bf16 * TERA}
        optional: tuple[tuple[ComputeDtype, float | None], ...] = (
            ("fp8", self.dense_tflops_fp8),
            ("int8", self.dense_tops_int8),
            ("fp4", self.dense_tflops_fp4),
        )
        for dt, v in optional:
            if v is not None:
                peaks[dt] = v * TERA
        return GPU(
            key=key,
            name=self.name,
            vendor=self.vendor,
            generation=self.generation or KNOWN_GENERATIONS.get(key, ""),
            memory_bytes=mem,
            memory_datasheet=self.memory_datasheet,
            memory_reported_bytes=None if self.memory_reported_gib is None else self.memory_reported_gib * GiB,
            memory_smi_bytes=None if self.memory_smi_mib is None else self.memory_smi_mib * MiB,
            compute_capability=self.compute_capability or "",
            memory_bandwidth_bytes_per_s=self.memory_bandwidth_tb_per_s * TERA,
            peak_flop_per_s=peaks,
            interconnect_bytes_per_s=self.interconnect_gb_per_s * GB,
            collective_latency_s=self.collective_latency_us * _S_PER_US,
            price_per_gpu_hour_usd=self.price_usd_per_gpu_hour,
            source=self.source,
            calibrated=self.calibrated,
            compute_memory_overlap=self.compute_memory_overlap,
            attention_compute_frac=self.attention_compute_frac,
            attention_bandwidth_frac=self.attention_bandwidth_frac,
            gpus_per_node=self.gpus_per_node or DEFAULT_GPUS_PER_NODE,
            scale_out_bytes_per_s=(self.scale_out_gb_per_s or DEFAULT_SCALE_OUT_GB_PER_S) * GB,
            scale_out_latency_s=(
                DEFAULT_SCALE_OUT_LATENCY_US if self.scale_out_latency_us is None else self.scale_out_latency_us
            )
            * _S_PER_US,
            arch=self.arch
            or KNOWN_ARCHS.get(key)
            or GENERATION_ARCHS.get(self.generation or KNOWN_GENERATIONS.get(key, ""), ""),
            kernel_ceiling=self.kernel_ceiling or "",
            kernel_ceiling_source=self.kernel_ceiling_source or "",
            tdp_w=self.tdp_w,
            idle_w=self.idle_w,
            server_power_w_per_gpu=self.server_power_w_per_gpu,
            power_source=self._power_source(),
        )


class ModelSpec(BaseModel):
    """A decoder-only transformer's shape, as in its published config.json.

    ``ffn`` is the dense MLP intermediate size; ``moe_ffn`` the per-expert one.
    MoE: ``experts`` routed experts of which ``experts_per_token`` are used per
    token, plus ``shared_experts`` always used (each ``shared_expert_ffn`` wide,
    0 = ``moe_ffn``); ``dense_layers`` of the layers are dense (leading as in
    DeepSeek, or interleaved as in Llama-4-Maverick: only the count matters).
    MLA (DeepSeek-V2/V3): ``kv_lora_rank`` > 0 switches the KV cache to the
    compressed latent plus the decoupled RoPE key.

    Layer kinds (only their counts change memory and time, not their positions):
    ``sliding_window_layers`` see the last ``sliding_window_tokens`` (Mistral,
    Gemma 2/3, gpt-oss); ``chunked_attention_layers`` see only their own
    ``chunked_attention_tokens``-long chunk (Llama-4); ``state_layers`` are
    linear-attention or state-space mixers (Qwen3-Next's Gated DeltaNet,
    Mamba in Jamba and Nemotron-H) that keep ``state_bytes_per_layer`` per
    sequence whatever its length and have ``state_params_per_layer`` weights;
    ``attention_free_layers`` have no mixer (DeciLM no-op attention); the rest
    are full attention.  ``mlp_free_layers`` have no MLP.  ``attention_sinks``:
    gpt-oss's learned per-head sink logit (no KV, ``heads`` weights per layer);
    ``attention_output_gate``: Qwen3-Next's sigmoid gate on the attention output
    (another d·h·k weights per attention layer, no KV).
    """

    model_config = FROZEN

    name: str = Field(min_length=1, max_length=120)
    layers: int = Field(ge=1, le=1000)
    hidden: int = Field(ge=1, le=262_144)
    heads: int = Field(ge=1, le=4096)
    kv_heads: int = Field(ge=1, le=4096)
    head_dim: int = Field(ge=1, le=4096)
    ffn: int = Field(ge=1, le=1_048_576)
    vocab: int = Field(ge=1, le=4_000_000)
    tied_embeddings: bool = False
    gated_mlp: bool = True
    qkv_bias: bool = False
    experts: int = Field(default=0, ge=0, le=4096, description="routed experts; 0 = dense")
    experts_per_token: int = Field(default=0, ge=0, le=4096)
    shared_experts: int = Field(default=0, ge=0, le=64)
    moe_ffn: int = Field(default=0, ge=0, le=1_048_576)
    dense_layers: int = Field(default=0, ge=0, le=1000, description="dense (non-MoE) MLP layers in an MoE")
    kv_lora_rank: int = Field(default=0, ge=0, le=65_536)
    q_lora_rank: int = Field(default=0, ge=0, le=65_536)
    qk_rope_head_dim: int = Field(default=0, ge=0, le=4096)
    qk_nope_head_dim: int = Field(default=0, ge=0, le=4096)
    v_head_dim: int = Field(default=0, ge=0, le=4096)
    sliding_window_tokens: int = Field(default=0, ge=0, le=100_000_000)
    sliding_window_layers: int = Field(default=0, ge=0, le=1000)
    context_window_tokens: int = Field(ge=1, le=100_000_000)
    min_cacheable_prompt_tokens: int = Field(default=0, ge=0, le=1_000_000)
    published_params: float = Field(default=0, ge=0, le=1e14)
    source: str = Field(default="", max_length=2000)
    # --- layer kinds beyond full / sliding attention (docs/model.md "Attention types and hybrid state")
    chunked_attention_tokens: int = Field(
        default=0, ge=0, le=100_000_000, description="chunked local attention: a query sees only its own chunk"
    )
    chunked_attention_layers: int = Field(default=0, ge=0, le=1000, description="layers with chunked attention")
    attention_sinks: bool = Field(default=False, description="one learned sink logit per head per layer (gpt-oss)")
    attention_output_gate: bool = Field(
        default=False, description="attention output gated by a second query-sized projection (Qwen3-Next)"
    )
    state_layers: int = Field(
        default=0, ge=0, le=1000, description="layers whose mixer is a recurrent state (linear attention, Mamba): no KV"
    )
    state_bytes_per_layer: int = Field(
        default=0, ge=0, le=100_000_000_000, description="fixed state one sequence holds in one state layer, bytes"
    )
    state_params_per_layer: int = Field(default=0, ge=0, le=100_000_000_000, description="weights of one state mixer")
    attention_free_layers: int = Field(
        default=0, ge=0, le=1000, description="layers with no token mixer at all (DeciLM no-op attention)"
    )
    mlp_free_layers: int = Field(default=0, ge=0, le=1000, description="layers with no MLP (Nemotron-H mixer blocks)")
    shared_expert_ffn: int = Field(default=0, ge=0, le=1_048_576, description="shared expert size; 0 = moe_ffn")
    architecture: str = Field(
        default="",
        max_length=120,
        pattern=r"^[A-Za-z0-9_]*$",
        description="the config.json's architectures[0] (Gemma3ForConditionalGeneration): engines key some rules on "
        "it (SGLang's hybrid sliding-window memory); '' = not known",
    )
    # the published checkpoints (planner/model/checkpoint_spec.py): the first is the preset's default
    checkpoints: tuple[Checkpoint, ...] = Field(default=(), max_length=16)
    mtp_layers: int = Field(
        default=0,
        ge=0,
        le=16,
        description="multi-token-prediction layers the checkpoint ships (num_nextn_predict_layers)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> ModelSpec:
        if self.kv_heads > self.heads:
            raise ValueError(f"kv_heads={self.kv_heads} must be ≤ heads={self.heads}")
        if self.heads % self.kv_heads:
            raise ValueError(f"heads={self.heads} must be divisible by kv_heads={self.kv_heads}")
        if self.experts:
            if not (1 <= self.experts_per_token <= self.experts):
                raise ValueError("experts_per_token must be in [1, experts]")
            if self.moe_ffn < 1:
                raise ValueError("moe_ffn must be ≥ 1 for an MoE model")
            if self.dense_layers > self.layers:
                raise ValueError("dense_layers must be ≤ layers")
        if self.sliding_window_layers > self.layers:
            raise ValueError("sliding_window_layers must be ≤ layers")
        if self.sliding_window_layers and not self.sliding_window_tokens:
            raise ValueError("sliding_window_layers needs sliding_window_tokens > 0")
        if self.kv_lora_rank and not (self.qk_nope_head_dim and self.v_head_dim):
            raise ValueError("MLA needs qk_nope_head_dim and v_head_dim")
        self._check_layer_kinds()
        keys = [c.key for c in self.checkpoints]
        if len(set(keys)) != len(keys):
            raise ValueError(f"checkpoints: keys must be unique, got {', '.join(keys)}")
        return self

    def checkpoint(self, key: str = "") -> Checkpoint | None:
        """The checkpoint ``key`` names ('' = the default, the first), or None (no such, or none listed)."""
        if not key:
            return self.checkpoints[0] if self.checkpoints else None
        return next((c for c in self.checkpoints if c.key == key), None)

    def _check_layer_kinds(self) -> None:
        """The per-kind layer counts fit in ``layers`` and carry their sizes."""
        if self.chunked_attention_layers and not self.chunked_attention_tokens:
            raise ValueError("chunked_attention_layers needs chunked_attention_tokens > 0")
        if self.chunked_attention_layers and self.sliding_window_layers:
            raise ValueError(
                "sliding_window_layers and chunked_attention_layers together are not supported "
                "(the engine holds one local window per model; no published model has both)"
            )
        if self.state_layers and not self.state_bytes_per_layer:
            raise ValueError("state_layers needs state_bytes_per_layer > 0")
        local = self.sliding_window_layers + self.chunked_attention_layers
        if local + self.state_layers + self.attention_free_layers > self.layers:
            raise ValueError(
                f"sliding ({self.sliding_window_layers}) + chunked ({self.chunked_attention_layers}) + state "
                f"({self.state_layers}) + attention-free ({self.attention_free_layers}) layers "
                f"exceed layers={self.layers}"
            )
        if self.attention_layers < 1:
            raise ValueError("a model needs at least one attention layer (a KV cache to plan)")
        if self.mlp_free_layers > self.layers:
            raise ValueError("mlp_free_layers must be ≤ layers")
        if self.experts and self.dense_layers + self.mlp_free_layers > self.layers:
            raise ValueError("dense_layers + mlp_free_layers must be ≤ layers")

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def attention_kind(self) -> str:
        if self.is_mla:
            return "MLA"
        if self.kv_heads == self.heads:
            return "MHA"
        if self.kv_heads == 1:
            return "MQA"
        return "GQA"

    @property
    def family(self) -> str:
        """The picker group: the family the name starts with (an "org/" prefix ignored), else "Other"."""
        name = self.name.lower().rsplit("/", 1)[-1]
        return next((label for prefix, label in MODEL_FAMILIES if name.startswith(prefix)), OTHER_FAMILY)

    @property
    def family_order(self) -> int:
        """Position of the family in :data:`MODEL_FAMILIES` (Other last)."""
        labels = list(dict.fromkeys(label for _, label in MODEL_FAMILIES))
        return labels.index(self.family) if self.family in labels else len(labels)

    @property
    def attention_layers(self) -> int:
        """Layers with softmax attention (full, sliding or chunked): the ones with a KV cache."""
        return self.layers - self.state_layers - self.attention_free_layers

    @property
    def full_attention_layers(self) -> int:
        """Attention layers that see the whole context."""
        return self.attention_layers - self.sliding_window_layers - self.chunked_attention_layers

    @property
    def is_hybrid(self) -> bool:
        """Some layers hold a fixed recurrent state instead of a growing KV cache."""
        return self.state_layers > 0

    @property
    def layer_summary(self) -> str:
        """The layer kinds in words, e.g. "18 full + 18 sliding (128)" or "12 full + 36 state"."""
        parts = [f"{self.full_attention_layers} full"] if self.full_attention_layers else []
        if self.sliding_window_layers:
            parts.append(f"{self.sliding_window_layers} sliding ({self.sliding_window_tokens:,})")
        if self.chunked_attention_layers:
            parts.append(f"{self.chunked_attention_layers} chunked ({self.chunked_attention_tokens:,})")
        if self.state_layers:
            parts.append(f"{self.state_layers} state")
        if self.attention_free_layers:
            parts.append(f"{self.attention_free_layers} no-attention")
        return " + ".join(parts)
