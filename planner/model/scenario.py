"""The user's Scenario: every input of the dashboard, the CLI and a shared link.

Each field is a link key (``planner.links``) with bounds; units are in the
field's description.  ``with_changes`` and ``on_gpu`` are the one way to derive
another scenario from this one (validated; the GPU-price rule in one place).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import AfterValidator, BaseModel, Field, ValidationError, model_validator

from planner.errors import ScenarioError, format_validation_error
from planner.model.checkpoint_spec import CHECKPOINT_KEY_PATTERN
from planner.model.dtypes import MATRIX_NAMES, AttentionDtype, QuantKey
from planner.model.engine_timing import OVERRIDE_PATTERN, parse_overrides
from planner.model.engine_versions import ENGINE_KEY_PATTERN
from planner.model.spec_methods import SpecMethod, Workload
from planner.model.specs import FROZEN, KEY_PATTERN

TTL = Literal["5m", "1h"]
#: Weight quantisation layouts (``planner.model.quantization``); '' = the weight dtype's usual one (or, with no
#: ``wdtype`` either, the checkpoint's: ``planner.model.weight_plan``).
Quant = QuantKey
#: '' = the checkpoint's (``planner.model.weight_plan``).
WeightDtype = Literal["", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]
KvCacheDtype = Literal["", "bf16", "fp16", "fp8", "int8", "int8_per_token_head", "fp8_per_token_head"]
#: The cacheable prefix when none is given: this many tokens, or the whole prompt if shorter.
DEFAULT_PREFIX_TOKENS = 1024
#: Electricity price default, USD per kWh: the mean of the 12 months Feb 2025 – Jan 2026 of EIA's US average retail
#: price of electricity to the industrial sector (0.0824 … 0.0929 USD/kWh;
#: https://ycharts.com/indicators/us_average_retail_price_of_electricity_industrial_sector, source EIA).
DEFAULT_ELECTRICITY_USD_PER_KWH = 0.087
CacheTraffic = Literal["arrivals", "followups"]
LengthDist = Literal["fixed", "uniform", "lognormal"]
#: The simulator's prefix cache (planner/sim/prefix_cache.py), routers (fleet.py) and bundled traces (traces.py).
PrefixCacheMode = Literal["pool", "unbounded", "off"]
Router = Literal["round_robin", "least_tokens", "prefix_affinity"]
TraceName = Literal["", "azure-code-2023", "azure-conv-2023", "mooncake-conversation", "mooncake-synthetic"]
#: Bounds of the layout keys (one instance: tp · dp · pp GPUs); ep up to the largest published (DeepSeek's EP320).
MAX_PP = 64
MAX_DP = 256
MAX_EP = 1024
MAX_EP_IMBALANCE = 64.0
#: Replicas of one pool: room for the largest fleets a sizing answer can be (2,000 req/s of a 70B model at
#: 4,000/500 tokens needs ~1,000 TP2 replicas on L40S-class GPUs); the search stops there and says so.  What a
#: simulation of that many costs is bounded by the simulator's work budget (planner/sim/budget.py), not here.
MAX_REPLICAS = 100_000


def _valid_timing(text: str) -> str:
    parse_overrides(text)  # ValueError names each bad item
    return text


#: max_num_seqs of one data-parallel engine of a prefill-pool replica (it only bounds how many prompts share a step).
PREFILL_POOL_BATCH = 256
#: The keys of a separate prefill pool, and their values in a colocated plan.
NO_PREFILL_POOL: dict[str, Any] = {
    "prefill_replicas": 0,
    "prefill_tp": None,
    "prefill_pp": None,
    "prefill_dp": None,
    "prefill_ep": None,
    "prefill_chunk": None,
}
#: The SLO's percentile (``slo_pct``), or the mean: ``planner.sim.slo``.
SloPct = Annotated[float, Field(ge=50.0, le=99.9)]
SloStat: TypeAlias = float | Literal["mean"]

#: The serving knobs the sizing search may tune (``planner.search.knob_search``); the layout (tp) always is.
SEARCH_AXES = ("batch", "chunk", "kvdtype", "wdtype", "spec", "disagg")
DEFAULT_SEARCH = "batch,chunk"


def _valid_keep(text: str) -> str:
    """A comma list of ``MATRIX_NAMES`` in their canonical order (or '')."""
    items = [t for t in text.split(",") if t]
    bad = [t for t in items if t not in MATRIX_NAMES]
    if bad:
        raise ValueError(f"unknown matrix {', '.join(bad)}; choose from {', '.join(MATRIX_NAMES)}")
    return ",".join(n for n in MATRIX_NAMES if n in items)


def _valid_search(text: str) -> str:
    """A comma list of ``SEARCH_AXES`` in canonical order, or ``none`` (the layout only)."""
    items = [t for t in text.split(",") if t]
    if items == ["none"]:
        return "none"
    bad = [t for t in items if t not in SEARCH_AXES]
    if bad or not items:
        shown = ", ".join(bad) if bad else "(empty)"
        raise ValueError(f"unknown search knob(s) {shown}; choose from {', '.join(SEARCH_AXES)}, or none")
    return ",".join(a for a in SEARCH_AXES if a in items)


def _valid_base(text: str) -> str:
    """A pinned baseline is one scenario's query; it pins no baseline of its own."""
    if any(part.startswith("base=") for part in text.split("&")):
        raise ValueError("a pinned baseline cannot pin another (no base= inside base)")
    return text


#: A custom model's display name: letters, digits, space and . _ - / + ( ) — a repo id or a file name, no markup.
CUSTOM_NAME_PATTERN = r"^[A-Za-z0-9 ._/+()-]*$"


class Scenario(BaseModel):
    """Everything the user can set; each field is a link key (see ``links.py``).

    Shape overrides (``layers`` … ``vocab``) are ``None`` when the preset's
    value is used.  Defaults describe a common deployment: Llama-3.1-8B in bf16
    on one H100 SXM, 32 concurrent 2k-token prompts with 256-token answers.
    """

    model_config = FROZEN

    gpu: str = Field(default="h100-sxm", pattern=KEY_PATTERN, description="GPU profile key")
    tp: int = Field(default=1, ge=1, le=64, description="GPUs per replica (tensor parallel)")
    model: str = Field(default="llama-3.1-8b", pattern=KEY_PATTERN, description="model preset key, or 'custom'")
    custom: str = Field(
        default="", max_length=600, pattern=r"^[A-Za-z0-9-]*$", description="custom model shape (model=custom)"
    )
    layers: int | None = Field(default=None, ge=1, le=1000)
    hidden: int | None = Field(default=None, ge=1, le=262_144)
    heads: int | None = Field(default=None, ge=1, le=4096)
    kv_heads: int | None = Field(default=None, ge=1, le=4096)
    head_dim: int | None = Field(default=None, ge=1, le=4096)
    ffn: int | None = Field(default=None, ge=1, le=1_048_576)
    vocab: int | None = Field(default=None, ge=1, le=4_000_000)
    wdtype: WeightDtype = Field(
        default="", description="weight dtype of every linear layer ('' = the preset's published checkpoint)"
    )
    kvdtype: KvCacheDtype = Field(default="", description="KV-cache dtype ('' = the checkpoint's, else bf16)")
    batch: int = Field(
        default=32,
        ge=1,
        le=65_536,
        description="concurrent decoding sequences of one instance (each of its dp engines holds batch / dp)",
    )
    prompt: int = Field(default=2048, ge=1, le=10_000_000, description="prompt tokens")
    output: int = Field(default=256, ge=1, le=1_000_000, description="output tokens")
    chunk: int = Field(default=2048, ge=16, le=10_000_000, description="prefill tokens per step")
    hit: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="prompt-cache hit rate: the API's, the share of simulated requests sharing the prefix, "
        "and the GPUs' prefix-cache hit rate unless gpu_hit is set",
    )
    gpu_hit: float | None = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="share of requests whose prefix the GPUs' prefix cache holds (vLLM/SGLang); None = hit",
    )
    prefix: int = Field(default=1024, ge=0, le=10_000_000, description="cacheable prefix tokens")
    rpm: float = Field(
        default=0.0, ge=0.0, le=1e6, description="requests/min sharing one prefix; >0 derives the hit rate from the TTL"
    )
    ttl: TTL = Field(default="5m", description="cache TTL: 5m (write 1.25x) or 1h (write 2x)")
    min_prefix: int | None = Field(default=None, ge=0, le=1_000_000, description="minimum cacheable prefix tokens")
    price_in: float = Field(default=5.0, ge=0.0, le=10_000.0, description="USD per million input tokens")
    price_out: float = Field(default=25.0, ge=0.0, le=10_000.0, description="USD per million output tokens")
    spec: bool = Field(default=False, description="speculative decoding on")
    gamma: int = Field(default=4, ge=0, le=16, description="draft tokens per step")
    alpha: float = Field(default=0.7, ge=0.0, le=1.0, description="draft token acceptance rate")
    draft: str = Field(default="", pattern=r"^$|" + KEY_PATTERN, description="draft model preset ('' = cost ratio)")
    draft_ratio: float = Field(default=0.05, ge=0.0, le=1.0, description="draft step cost / target step cost")
    spec_method: SpecMethod = Field(
        default="",
        description="what proposes the draft tokens: draft_model, eagle, eagle3, ngram, mtp ('' = the draft preset, "
        "else the cost ratio; planner/model/spec_methods.py)",
    )
    spec_workload: Workload = Field(
        default="chat", description="the workload whose published acceptance sets α when α is left at its default"
    )
    gpu_price: float | None = Field(default=None, ge=0.0, le=1000.0, description="USD per GPU-hour")
    gpu_power_w: float | None = Field(
        default=None, gt=0.0, le=5000.0, description="board power limit, W (a power cap; None = the profile's TDP)"
    )
    electricity_usd_per_kwh: float = Field(
        default=DEFAULT_ELECTRICITY_USD_PER_KWH, ge=0.0, le=10.0, description="electricity price, USD per kWh"
    )
    pue: float = Field(
        default=1.0, ge=1.0, le=5.0, description="power usage effectiveness: site power ÷ IT power (1 = IT only)"
    )
    power_limit_kw: float = Field(
        default=0.0,
        ge=0.0,
        le=1e7,
        description="rack or site power the fleet's IT power must stay within, kW (0 = none; the sizing search "
        "holds it)",
    )
    mfu: float | None = Field(
        default=None,
        ge=0.01,
        le=1.0,
        description="large-matmul FLOP/s ÷ dense peak; None = the engine profile's fitted value",
    )
    mbu: float | None = Field(
        default=None,
        ge=0.01,
        le=1.0,
        description="weight-streaming bytes/s ÷ peak bandwidth; None = the engine profile's fitted value",
    )
    mem_util: float | None = Field(
        default=None,
        ge=0.05,
        le=1.0,
        description="share of GPU memory the server may use (vLLM gpu_memory_utilization, SGLang mem_fraction_static); "
        "None = the engine version's own default (planner/engine/defaults.py)",
    )
    block: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="paged KV block (SGLang: page) size, tokens; None = the one the engine version picks",
    )
    # the SLO (planner/sim/slo.py): each target may be unset (None); slo_pct below is their statistic
    slo_ttft_s: float | None = Field(default=2.0, gt=0.0, le=3600.0, description="TTFT target, seconds")
    slo_tpot_s: float | None = Field(
        default=None,
        gt=0.0,
        le=60.0,
        description="per-request TPOT target, seconds: (E2EL − TTFT) / (output − 1) as vllm bench serve reports it "
        "(a link giving it without slo_itl_s means the ITL target, as links did before)",
    )
    slo_itl_s: float | None = Field(
        default=0.05, gt=0.0, le=60.0, description="inter-token latency target, seconds: every gap, over tokens"
    )
    slo_e2e_s: float | None = Field(
        default=None, gt=0.0, le=36_000.0, description="end-to-end latency (E2EL) target, seconds"
    )
    rate: float = Field(default=2.0, gt=0.0, le=100_000.0, description="simulated arrivals, requests/s (Poisson)")
    dist: LengthDist = Field(default="lognormal", description="prompt/output length distribution")
    spread: float = Field(default=0.5, ge=0.0, le=5.0, description="coefficient of variation of lengths")
    sim_requests: int = Field(default=2000, ge=10, le=100_000, description="requests simulated")
    seed: int = Field(default=0, ge=0, le=2**31 - 1, description="simulation random seed")
    layout: str = Field(
        default="", max_length=2000, pattern=r"^[A-Za-z0-9._~:,;|*-]*$", description="prompt layout, compact encoding"
    )
    engine: str = Field(
        default="vllm",
        max_length=80,
        pattern=ENGINE_KEY_PATTERN,
        description="serving engine and version, NAME@VERSION (vllm@0.19, sglang@0.5.23, trtllm@0.9); a name "
        "alone means its newest version (planner/model/engine_versions.py)",
    )
    # the simulator's traffic, prefix cache and fleet
    prefix_cache: PrefixCacheMode = Field(
        default="pool", description="simulated prefix cache: pool (vLLM: in the free KV blocks), unbounded, off"
    )
    replicas: int = Field(default=1, ge=1, le=MAX_REPLICAS, description="replicas simulated behind the router")
    router: Router = Field(default="round_robin", description="round_robin, least_tokens or prefix_affinity")
    trace: TraceName = Field(default="", description="bundled trace replayed instead of Poisson arrivals ('' = none)")
    trace_scale: float = Field(default=1.0, gt=0.0, le=1000.0, description="trace replay rate, × the recorded rate")
    trace_start_s: float = Field(default=0.0, ge=0.0, le=1e7, description="trace window start, seconds")
    trace_duration_s: float = Field(
        default=0.0, ge=0.0, le=1e7, description="trace window length, seconds (0 = to the end)"
    )
    # memory as the serving engine does it (docs/model.md §1-3)
    quant: Quant = Field(default="", description="weight quantisation layout ('' = the weight dtype's usual one)")
    # the published checkpoint and per-component formats (planner/model/weight_plan.py; docs/model.md §2)
    ckpt: str = Field(
        default="",
        pattern=r"^$|" + CHECKPOINT_KEY_PATTERN,
        description="the preset's checkpoint to plan with ('' = its default, the published one)",
    )
    quant_attn: Quant = Field(default="", description="layout of the attention projections ('' = the checkpoint's)")
    quant_mlp: Quant = Field(
        default="", description="layout of the dense MLPs and shared experts ('' = the checkpoint's)"
    )
    quant_experts: Quant = Field(default="", description="layout of the routed experts ('' = the checkpoint's)")
    quant_keep: Annotated[str, AfterValidator(_valid_keep)] = Field(
        default="",
        max_length=400,
        description="matrices kept in 16 bit, comma-separated (q_a_proj, kv_b_proj, o_proj …; '' = the checkpoint's)",
    )
    attn_dtype: AttentionDtype = Field(
        default="", description="attention math: bf16 ('' = bf16) or fp8 (FlashAttention 3 / FlashInfer, fp8 KV)"
    )
    qgroup: int = Field(default=128, ge=0, le=1024, description="GPTQ/AWQ/W4A16 group size, weights (0 = per channel)")
    hybrid_kv: bool = Field(
        default=True, description="vLLM's hybrid KV-cache manager on (window layers keep only their window)"
    )
    cal_total_gib: float | None = Field(default=None, gt=0.0, le=10_000.0, description="logged total memory, GiB")
    cal_weights_gib: float | None = Field(default=None, ge=0.0, le=10_000.0, description="logged weights, GiB")
    cal_act_gib: float | None = Field(default=None, ge=0.0, le=10_000.0, description="logged peak activation, GiB")
    cal_nontorch_gib: float | None = Field(
        default=None, ge=0.0, le=10_000.0, description="logged non-torch memory increase, GiB"
    )
    cal_graph_gib: float | None = Field(default=None, ge=0.0, le=10_000.0, description="logged CUDA-graph memory, GiB")

    @model_validator(mode="before")
    @classmethod
    def _prefix_follows_prompt(cls, data: Any) -> Any:
        """No prefix given: ``DEFAULT_PREFIX_TOKENS``, or the whole prompt when it is shorter."""
        if isinstance(data, dict) and data.get("prefix") is None:
            prompt = data.get("prompt", 2048)
            if isinstance(prompt, int) and not isinstance(prompt, bool) and prompt >= 1:
                data = {**data, "prefix": min(DEFAULT_PREFIX_TOKENS, prompt)}
            else:
                data = {k: v for k, v in data.items() if k != "prefix"}
        return data

    @model_validator(mode="before")
    @classmethod
    def _method_turns_speculation_on(cls, data: Any) -> Any:
        """``spec_method=…`` without ``spec``: speculation on (a method names a proposer to run)."""
        if isinstance(data, dict) and data.get("spec_method") and "spec" not in data:
            data = {**data, "spec": True}
        return data

    timing: Annotated[str, AfterValidator(_valid_timing)] = Field(
        default="",
        max_length=200,
        pattern=OVERRIDE_PATTERN,
        description="efficiency parameters fitted to the user's own benchmark (engine_timing.parse_overrides)",
    )
    cache_traffic: CacheTraffic = Field(
        default="arrivals",
        description="how requests on one prefix reach the API cache: independent arrivals (Poisson, every "
        "request refreshes the TTL) or follow-ups sent after the previous response ends",
    )
    response_s: float = Field(
        default=0.0, ge=0.0, le=3600.0, description="follow-ups: the API's response time before each follow-up, s"
    )
    custom_name: str = Field(
        default="",
        max_length=100,
        pattern=CUSTOM_NAME_PATTERN,
        description="display name of a custom model (model=custom): config.json's _name_or_path or its file name",
    )

    # the SLO's percentile and goodput share, the sizing search's knobs, the pinned baseline (issue 17)
    slo_pct: SloPct | Literal["mean"] = Field(
        default=99.0,
        description="the statistic every target holds: mean, or a percentile in [50, 99.9] (TTFT, TPOT and E2EL "
        "over requests, ITL over tokens)",
    )
    slo_goodput: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="share of requests that must meet both targets (goodput; 0 = no requirement)",
    )
    search: Annotated[str, AfterValidator(_valid_search)] = Field(
        default=DEFAULT_SEARCH,
        max_length=80,
        description="knobs the sizing search tunes besides GPU and layout: " + ", ".join(SEARCH_AXES),
    )
    base: Annotated[str, AfterValidator(_valid_base)] = Field(
        default="",
        max_length=4000,
        pattern=r"^[A-Za-z0-9._~:,;|*=&%+-]*$",
        description="the pinned baseline scenario: its own link query ('' = none)",
    )

    # parallelism beyond tensor parallel (planner/engine/parallel.py; docs/model.md "Parallelism"):
    # one serving instance runs on tp · dp · pp GPUs
    pp: int = Field(default=1, ge=1, le=MAX_PP, description="pipeline stages (layers split across them)")
    ep: int = Field(
        default=1,
        ge=1,
        le=MAX_EP,
        description="expert-parallel degree of the MoE layers (the tp · dp GPUs of a stage hold ep groups of experts)",
    )
    dp: int = Field(
        default=1,
        ge=1,
        le=MAX_DP,
        description="data-parallel attention ranks inside one instance (MoE models; each holds its own sequences)",
    )
    eplb: bool = Field(
        default=True, description="expert-parallel load balancer on (vLLM --enable-eplb; SGLang --enable-eplb)"
    )
    ep_imbalance: float | None = Field(
        default=None,
        ge=1.0,
        le=MAX_EP_IMBALANCE,
        description="routed tokens on the busiest EP rank ÷ the mean; None = the measured value with or without EPLB",
    )
    redundant_experts: int = Field(
        default=0,
        ge=0,
        le=MAX_EP,
        description="extra copies of hot experts EPLB places (vLLM num_redundant_experts, SGLang "
        "--ep-num-redundant-experts): E + r experts split over ep",
    )
    tbo: bool = Field(
        default=False,
        description="two-batch overlap: one micro-batch's MoE dispatch/combine hidden under the other's compute "
        "(SGLang --enable-two-batch-overlap, vLLM --enable-dbo)",
    )

    # disaggregated serving (docs/deploy.md): a separate prefill pool; the scenario's own layout, batch, chunk and
    # replicas are then the decode pool's.  The prefill_* keys are read only where prefill_replicas > 0.
    prefill_replicas: int = Field(
        default=0,
        ge=0,
        le=MAX_REPLICAS,
        description="replicas of a separate prefill pool (disaggregated prefill/decode); 0 = colocated: every "
        "replica prefills and decodes",
    )
    prefill_tp: int | None = Field(default=None, ge=1, le=64, description="prefill pool tp (None = the scenario's)")
    prefill_pp: int | None = Field(default=None, ge=1, le=MAX_PP, description="prefill pool pp (None = the scenario's)")
    prefill_dp: int | None = Field(default=None, ge=1, le=MAX_DP, description="prefill pool dp (None = the scenario's)")
    prefill_ep: int | None = Field(default=None, ge=1, le=MAX_EP, description="prefill pool ep (None = the scenario's)")
    prefill_chunk: int | None = Field(
        default=None, ge=16, le=10_000_000, description="prefill pool tokens per step (None = the scenario's chunk)"
    )

    @model_validator(mode="after")
    def _prefix_within_prompt(self) -> Scenario:
        if self.prefix > self.prompt:
            raise ValueError(f"prefix={self.prefix} must be ≤ prompt={self.prompt}")
        return self

    def with_changes(self, **changes: Any) -> Scenario:
        """This scenario with ``changes`` (field name → value), validated as a whole.

        Raises ``ScenarioError`` naming each unknown key or bad value."""
        unknown = [k for k in changes if k not in type(self).model_fields]
        if unknown:
            raise ScenarioError([f"{k}: not a scenario key" for k in unknown])
        if not changes:
            return self
        data = self.model_dump()
        if "prefix" not in changes and self.prefix == default_prefix(self.prompt):
            data.pop("prefix")  # a prefix at its default follows the prompt
        try:
            return type(self).model_validate({**data, **changes})
        except ValidationError as exc:
            raise ScenarioError([format_validation_error(exc)]) from None

    def gpu_switch(self, gpu: str, tp: int | None = None) -> dict[str, Any]:
        """The changes that move this scenario to GPU profile ``gpu`` (and ``tp``).

        The one home of the price rule: a ``gpu_price`` override is the user's price for
        *their* GPU, so it is dropped on any other profile (which then costs its catalog price)."""
        changes: dict[str, Any] = {}
        if gpu != self.gpu:
            changes["gpu"] = gpu
            if self.gpu_price is not None:
                changes["gpu_price"] = None
            if self.gpu_power_w is not None:
                changes["gpu_power_w"] = None  # a power cap is the user's for their GPU, as the price
        if tp is not None and tp != self.tp:
            changes["tp"] = tp
        return changes

    def on_gpu(self, gpu: str, tp: int | None = None) -> Scenario:
        """This scenario on GPU profile ``gpu`` at ``tp`` (``gpu_switch``'s price rule)."""
        return self.with_changes(**self.gpu_switch(gpu, tp))

    @property
    def gpu_hit_rate(self) -> float:
        """The GPUs' prefix-cache hit rate: ``gpu_hit``, else ``hit``; 0 with the prefix cache off."""
        if self.prefix_cache == "off":
            return 0.0
        return self.gpu_hit if self.gpu_hit is not None else self.hit

    @property
    def disaggregated(self) -> bool:
        """Whether the plan has a separate prefill pool (``prefill_replicas`` > 0)."""
        return self.prefill_replicas > 0

    def prefill_pool(self) -> Scenario:
        """The prefill pool's replica as a scenario of its own: its layout and chunk (the decode pool's where a
        ``prefill_*`` key is unset), max_num_seqs = min(chunk, ``PREFILL_POOL_BATCH``) per data-parallel engine
        (it only bounds how many prompts share a step), no speculation (a prefill emits one token), and
        ``prefill_replicas`` replicas.  The sizing search prices the same pool (``search.knob_search``)."""
        dp = self.prefill_dp or self.dp
        chunk = self.prefill_chunk or self.chunk
        return self.with_changes(
            tp=self.prefill_tp or self.tp,
            pp=self.prefill_pp or self.pp,
            dp=dp,
            ep=self.prefill_ep or self.ep,
            chunk=chunk,
            batch=min(chunk, PREFILL_POOL_BATCH) * dp,
            spec=False,
            replicas=max(self.prefill_replicas, 1),
            **NO_PREFILL_POOL,
        )


def default_prefix(prompt: int) -> int:
    """The cacheable prefix a scenario has when none is given: min(1024, prompt)."""
    return min(DEFAULT_PREFIX_TOKENS, prompt)
