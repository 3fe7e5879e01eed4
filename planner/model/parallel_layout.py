"""Model-side facts of a parallel layout: how the weights divide into groups the layouts split
differently, how the engines split layers into pipeline stages, and the measured constants of
expert parallelism (docs/model.md "Parallelism"; the array arithmetic is ``planner.engine.parallel``).

Weight groups (whole model, bytes as stored: quantised weights with their scales, or 16 bit):

  routed experts       split over the ep × moe_tp grid of a stage's tp · dp GPUs (whole experts over ep,
                       each expert's FFN over moe_tp = tp · dp / ep)
  dense MLPs           the dense layers' MLPs (DeepSeek's first 3): over tp, replicated across dp ranks
  shared experts       over tp (vLLM ``DeepseekV2MoE.shared_experts``), replicated across dp ranks
  replicated linears   MLA's ``q_a_proj`` and ``kv_a_proj_with_mqa``: ``ReplicatedLinear`` (vLLM 0.19
                       ``deepseek_v2.py:457, 481``; ``fused_qkv_a_proj`` with ``disable_tp=True``): whole on every rank
  vocabulary table     one v · d table padded to 64 rows: the embedding on the first stage, the LM head on the
                       last (a tied model keeps one table at pp = 1, one per end stage at pp > 1;
                       vLLM ``llama.py:373-391``: ``if get_pp_group().is_first_rank or (config.tie_word_embeddings
                       and get_pp_group().is_last_rank)``)
  the rest             attention and state mixers, biases: over tp, spread over the layers

Pipeline split of L layers over pp stages, base = L // pp, r = L % pp spare layers:
  vLLM 0.19      one spare each to the stages before the last (pp − 2, pp − 3, …): 61 / 2 = [31, 30]
                 (``distributed/utils.py:95-140`` ``get_pp_indices``)
  SGLang 0.5     one spare each to the last r stages: 61 / 2 = [30, 31] (``srt/distributed/utils.py:110-151``)
  TensorRT-LLM   one spare each to the first r stages (``mapping.py``, ``torch.tensor_split``)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.model.quantization import (
    FP8_BLOCK,
    VOCAB_PADDING,
    Scheme,
    WeightFormat,
    as_format,
    linear_matrices,
    matrix_bytes,
)
from planner.model.specs import ModelSpec
from planner.units import GiB

#: Routed tokens on the busiest EP rank ÷ the mean, measured on DeepSeek-R1 at EP32 (TensorRT-LLM blog 4,
#: NVIDIA/TensorRT-LLM@1d263f15a979ef2902c60de3f6238bcc0952bb29:docs/source/blogs/tech_blog/
#: blog4_Scaling_Expert_Parallelism_in_TensorRT-LLM.md: "Without EPLB … the hottest rank receives 1.56 times more
#: routed tokens than the mean. EPLB … only about 0.11 times more"): max/mean 2.56 without, 1.11 with.
EP_IMBALANCE_EPLB = 1.109
EP_IMBALANCE_NO_EPLB = 2.564
#: DeepEP's buffer per rank in vLLM (``VLLM_DEEPEP_BUFFER_SIZE_MB = 1024``, vllm/envs.py:223): created after the
#: start-up snapshot, so it counts as non-torch memory where expert parallelism runs all-to-all (dp > 1).
EP_BUFFER_BYTES = 1.0 * GiB
#: DeepEP dispatches FP8 tokens with one fp32 scale per 128 values where the model runs FP8 GEMMs
#: ("FP8 dispatching and BF16 combining", DeepEP docs/legacy.md), else 16-bit tokens; combine is 16 bit.
FP8_DISPATCH_BYTES = 1.0 + 4.0 / FP8_BLOCK
COMBINE_BYTES = 2.0
#: Two-batch overlap hides this share of min(compute, exchange) (perfect overlap: 1).  Fitted by
#: ``benchmarks/accuracy/multi_gpu.py --fit-tbo`` to SGLang's one published on/off pair (lm-sys blog
#: 2025-05-05-large-scale-ep: "a 35% speedup at 128 sequences/device, with throughput 17,552 tokens per second
#: compared to 12,929 without TBO", DeepSeek-V3 decode on 9 × 8 H100, EP72); held out: its other rows.
TBO_OVERLAP_FRAC = 0.646
#: Stage split rules by engine (``EngineInputs.mem_rule`` codes): where the spare layers go.
SPLIT_RULES = {0: "vllm", 1: "sglang", 2: "trtllm"}


@dataclass(frozen=True, order=True)
class Layout:
    """One serving instance's layout: tp · dp · pp GPUs, the MoE layers' experts over ep of them."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp * self.pp

    def nodes(self, gpus_per_node: int) -> int:
        """Nodes (scale-up domains) the instance spans: ⌈GPUs / gpus_per_node⌉."""
        return -(-self.gpus // gpus_per_node)

    @property
    def label(self) -> str:
        """'tp8·pp2', 'tp1·dp16·ep16' (the default parts left out; plain tp: 'tp8')."""
        parts = [f"tp{self.tp}"] + [f"{k}{v}" for k, v in (("dp", self.dp), ("pp", self.pp), ("ep", self.ep)) if v > 1]
        return "·".join(parts)

    def on(self, gpu_name: str) -> str:
        """'4 × NVIDIA H100 SXM'; beyond plain tensor parallel the layout too: '16 × NVIDIA H100 SXM (tp8·pp2)'."""
        plain = self.pp == self.dp == self.ep == 1
        return f"{self.gpus} × {gpu_name}" + ("" if plain else f" ({self.label})")

    def changes(self) -> dict[str, int]:
        """The scenario keys that set this layout."""
        return {"tp": self.tp, "pp": self.pp, "ep": self.ep, "dp": self.dp}


def stage_layers(layers: int, pp: int, rule: str = "vllm") -> list[int]:
    """Layers of each pipeline stage under the engine's split rule (module doc)."""
    base, spare = divmod(layers, pp)
    first = {"vllm": pp - 1 - spare, "sglang": pp - spare, "trtllm": 0}[rule]
    return [base + (1 if first <= s < first + spare else 0) for s in range(pp)]


@dataclass(frozen=True)
class WeightGroups:
    """The weight groups of the module doc, whole model, bytes as stored (vocabulary: parameters)."""

    expert_bytes: float
    dense_mlp_bytes: float
    shared_expert_bytes: float
    replicated_linear_bytes: float
    vocab_table_params: float


#: MLA's projections vLLM keeps whole on every rank (``ReplicatedLinear``).
REPLICATED_LINEARS = frozenset({"q_a_proj", "kv_a_proj_with_mqa"})


def weight_groups(m: ModelSpec, fmt: Scheme | WeightFormat, group: int = 128) -> WeightGroups:
    """The groups of ``m`` stored in ``fmt`` (the matrices ``quantization.linear_matrices`` lists, each in
    its component's scheme)."""
    f = as_format(fmt, group)
    sums = {"experts": 0.0, "dense": 0.0, "shared": 0.0, "replicated": 0.0}
    for x in linear_matrices(m):
        stored = matrix_bytes(x, f.scheme_of(x), f.group, f)
        if x.expert:
            sums["experts"] += stored
        elif x.name.startswith("shared_experts."):
            sums["shared"] += stored
        elif x.component == "mlp":
            sums["dense"] += stored
        elif m.is_mla and x.name in REPLICATED_LINEARS:
            sums["replicated"] += stored
    padded = math.ceil(m.vocab / VOCAB_PADDING) * VOCAB_PADDING
    return WeightGroups(
        expert_bytes=sums["experts"],
        dense_mlp_bytes=sums["dense"],
        shared_expert_bytes=sums["shared"],
        replicated_linear_bytes=sums["replicated"],
        vocab_table_params=float(padded * m.hidden),
    )


def dispatch_bytes_per_element(compute_dtype: str) -> float:
    """Bytes per activation value an expert-parallel dispatch sends (module constants)."""
    return FP8_DISPATCH_BYTES if compute_dtype == "fp8" else COMBINE_BYTES
