"""Which basis a scenario's times rest on, and the measured kernel curves where tables cover it.

``basis_for`` answers, for one scenario: the engine version's ``[kernels]`` section names a table release
(``planner.model.engine_kernels``); if a table of that release (or the user's own, docs/kernel_tables.md)
covers the GPU and every kernel the scenario needs (``kernel_shapes``), the step time is the sum of those
kernels (``planner.kernels.curves``, id in ``EngineInputs.kernel_set``) plus the section's fitted per-step
costs — "measured kernels (vLLM 0.24.0, H100 SXM)".  Otherwise the fitted roofline of ``[timing]``
stays — "fitted roofline (vLLM 0.19.0 profile, 89 published rows)", with the reason when a table exists
but misses a kernel.  Curves per kernel (ms per call → s per step, × the layers that run it):

  tokens     Σ dense GEMMs(T) · count  (the untimed element-wise kernels, T · e, are added at the step:
             ``EngineInputs.elementwise_s_per_token``, fitted)
  experts    MoE layers · moe(T tokens entering the layer), at the scenario's (moe_tp, moe_ep) split; an
             unmeasured model shape: the nearest measured shape × the roofline ratio of the two
  head       lm_head(T logit rows)
  decode     full layers · gen(B, K) + window layers · gen(B, min(K, W))    (MLA: its module, or its kernel
             + the projections at B tokens + the absorbed BMMs)
  prefill    full layers · ctx(B, S) + window layers · ctx(B, S_w) with S_w(S_w + 1)/2 = S·W − W(W−1)/2 the
             full prompt of the same attention work (MLA: module, or kernel + projections at B·S tokens)
  allreduce  one all-reduce of T·d·2 B over tp GPUs (graph variant for decode-only steps, eager otherwise);
             NaN where the table has no such GPU count (the roofline's link model is used there)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from planner.engine.kernel_shapes import MLA_MODEL, Dtypes, Gemm, Shapes, elementwise_s_per_token, shapes
from planner.kernels import lookup
from planner.kernels.curves import BATCH_GRID, SEQ_GRID, TOKEN_GRID, KernelCurves, family, register
from planner.kernels.format import ANY_ENGINE, Table
from planner.kernels.lookup import NotMeasured
from planner.kernels.store import TableSet, table_set
from planner.model.engine_profile import EngineProfile
from planner.model.engine_timing import parse_overrides
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.units import ACTIVATION_BYTES, MS_PER_S, US_PER_S

#: Expert parallelism beyond one node: the tables' EP classes past 8 GPUs time vLLM's and SGLang's all-gather
#: path (every rank routes every token), not a DeepEP dispatch; a wide-EP rank is timed as an EP-8 rank doing the
#: same per-rank work (docs/model.md §4–5 "Measured kernels").
WIDE_EP_REFERENCE = 8
#: The ``timing`` override fields that apply on the kernel basis too (its fitted fixed costs); any other
#: letter is a roofline calibration, and the scenario runs on the roofline it was calibrated on.
OVERHEAD_FIELDS = frozenset({"step_overhead_s", "layer_overhead_s", "decode_layer_overhead_s"})
ENGINE_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM", ANY_ENGINE: "your own microbenchmark"}


@dataclass(frozen=True)
class Basis:
    """What a scenario's time figures rest on (module doc)."""

    kernel_set: float  # ≥ 1: the id of its curves; 0: the fitted roofline
    label: str
    step_overhead_s: float = 0.0  # the kernel basis's fitted costs (used instead of [timing]'s)
    layer_overhead_s: float = 0.0
    decode_layer_overhead_s: float = 0.0
    elementwise_s_per_token: float = 0.0  # the kernels no table times, at tp = 1 (kernel_shapes; ÷ tp per GPU)
    ep_imbalance: float = 0.0  # the busiest EP rank's routed tokens ÷ the mean, as the MoE rows measured (0: none)
    host_s_per_seq: float = 0.0  # the host's work per sequence of a step ([kernels] host_us_per_seq)
    moe_time_ratio: float = 1.0  # this version's expert layer ÷ the tables' ([kernels] moe_time_ratio)

    @property
    def measured(self) -> bool:
        return self.kernel_set > 0


def roofline_label(engine: EngineProfile | None, why: str = "") -> str:
    """'fitted roofline (vLLM 0.19.0 profile, 89 published rows)' (+ why no table applies)."""
    if engine is None:
        head = "plain roofline (no engine profile)"
    elif engine.timing.fitted_rows:
        head = f"fitted roofline ({engine.label} profile, {engine.timing.fitted_rows} published rows"
        head += f"; {why})" if why else ")"
        return head
    else:
        head = f"roofline ({engine.label} profile, not fitted"
        return head + (f"; {why})" if why else ")")
    return head + (f"; {why}" if why else "")


@dataclass
class _Family:
    """The curves of one (GPU, tables, model, dtypes) at each layout, built on first use (``curves.Family``)."""

    tables: TableSet
    model: ModelSpec
    dtypes: Dtypes
    distribution: str
    gpu: GPU
    built: dict[tuple[int, int, int], KernelCurves | None] = field(default_factory=dict)
    why: dict[tuple[int, int, int], str] = field(default_factory=dict)

    def curves(self, tp: int, ep: int, dp: int) -> KernelCurves | None:
        key = (tp, ep, dp)
        if key not in self.built:
            sh = shapes(self.model, self.dtypes, tp, ep, dp)
            try:
                self.built[key] = _build(self.tables, sh, self.distribution, self.gpu)
            except NotMeasured as exc:
                self.built[key], self.why[key] = None, str(exc)
        return self.built[key]


def basis_for(gpu: GPU, model: ModelSpec, s: Scenario, engine: EngineProfile | None) -> Basis:
    """The basis of ``s`` on ``gpu`` (module doc): measured kernels where the tables cover it."""
    k = engine.kernels if engine is not None else None
    if k is None or not k.enabled:
        return Basis(0.0, roofline_label(engine))
    if gpu.calibrated:
        return Basis(0.0, roofline_label(engine, "a measured machine runs at its own measured rates"))
    if s.mfu is not None or s.mbu is not None:
        return Basis(0.0, roofline_label(engine, "the link sets MFU/MBU: the roofline at those efficiencies"))
    if set(parse_overrides(s.timing)) - OVERHEAD_FIELDS:
        return Basis(0.0, roofline_label(engine, "the link's timing is a roofline calibration"))
    tables = table_set(gpu.key, k.engine, k.version, gpu.kernel_ceiling, gpu.kernel_ceiling_slack)
    if tables is None:
        name = ENGINE_NAMES.get(k.engine, k.engine)
        return Basis(0.0, roofline_label(engine, f"no {name} kernel table for {gpu.name}"))
    dtypes = Dtypes.of(model, s)
    unsupported = shapes(model, dtypes, s.tp, s.ep, s.dp).unsupported
    if unsupported:
        return Basis(0.0, roofline_label(engine, unsupported))
    # EPLB on, or an imbalance the link states: the balanced rows × that imbalance; else the profile's routing
    # (its MLA-family one for DeepSeek-architecture models, where the profile names one)
    routing = (k.moe_distribution_mla or k.moe_distribution) if model.is_mla else k.moe_distribution
    routing = routing if not s.eplb and s.ep_imbalance is None else "balanced"
    key = (tables.key, model, dtypes, routing, gpu.key, gpu.name, gpu.memory_bandwidth_bytes_per_s)
    kid = register(key, lambda: _Family(tables, model, dtypes, routing, gpu))
    fam = family(kid)
    built = fam.curves(s.tp, s.ep, s.dp)
    if built is None:
        assert isinstance(fam, _Family)
        return Basis(0.0, roofline_label(engine, fam.why[(s.tp, s.ep, s.dp)]))
    return Basis(
        kid,
        built.label,
        k.step_overhead_us / US_PER_S,
        k.layer_overhead_us / US_PER_S,
        k.decode_layer_overhead_us / US_PER_S,
        elementwise_s_per_token(gpu, model, 1.0, k.elementwise_bandwidth_frac),  # ÷ tp per GPU, at the step
        built.ep_imbalance,
        k.host_us_per_seq / US_PER_S,
        k.moe_time_ratio,
    )


def _table(tables: TableSet, name: str, used: set[str]) -> Table:
    t, f = tables.table(name, collective=name == "nccl")
    if t is None:
        raise NotMeasured(f"no {name.replace('_', ' ')} table for {tables.gpu}")
    used.add(f"{ENGINE_NAMES.get(f.meta.engine, f.meta.engine)} {f.meta.engine_version}")
    return t


def _s(ms: np.ndarray) -> np.ndarray:
    return ms / MS_PER_S


def _gemms_s(t: Table, gemms: tuple[Gemm, ...], tokens) -> np.ndarray:
    out = np.zeros(np.shape(tokens))
    for g in gemms:
        out = out + g.count * _s(lookup.gemm_ms(t, g.dtype, g.n, g.k, tokens))
    return out


def _attention_class(t: Table, sh: Shapes, window: int) -> tuple[dict, float, float]:
    """(exact match, query heads, scale): the class of the scenario's heads; where its KV-head count was never
    measured, the nearest measured one at the same query-per-KV ratio, scaled ∝ KV heads (noted)."""
    match = dict(attn_dtype="bfloat16", kv_dtype=sh.kv_dtype, head_dim=sh.head_dim, window=window)
    have = t.keys["kv_heads"][lookup._rows(t, match)]
    if have.size == 0:
        raise NotMeasured(f"{t.name} not measured for head_dim {sh.head_dim}, {sh.kv_dtype} KV, window {window}")
    kv = sh.kv_heads if sh.kv_heads in have else int(have[np.argmin(np.abs(np.log(have / sh.kv_heads)))])
    return {**match, "kv_heads": kv}, sh.heads * kv / sh.kv_heads, sh.kv_heads / kv


def _windowed_prefill_seq(seq: np.ndarray, window: int) -> np.ndarray:
    """S_w with S_w(S_w + 1)/2 = the keys a window-W causal prefill of S tokens attends (module doc)."""
    keys = np.where(seq <= window, seq * (seq + 1.0) / 2.0, seq * window - window * (window - 1.0) / 2.0)
    return (np.sqrt(1.0 + 8.0 * keys) - 1.0) / 2.0


def _attention_grid(t: Table, sh: Shapes, seq_above, decode: bool) -> np.ndarray:
    """Σ over attention layers on BATCH_GRID × SEQ_GRID (module doc)."""
    full_layers = sh.attention_layers - sh.window_layers
    match, heads, scale = _attention_class(t, sh, 0)
    out = full_layers * scale * _s(lookup.attention_ms(t, match, heads, BATCH_GRID, SEQ_GRID, seq_above))
    if sh.window_layers:
        w = sh.window_tokens
        seq = np.minimum(SEQ_GRID, w) if decode else _windowed_prefill_seq(SEQ_GRID, w)
        out = out + sh.window_layers * scale * _s(lookup.attention_ms(t, match, heads, BATCH_GRID, seq, seq_above))
    return out


def _mla_grids(tables: TableSet, sh: Shapes, used: set[str]) -> tuple[np.ndarray, np.ndarray]:
    """(decode, prefill) of an MLA model (module doc)."""
    layers = sh.attention_layers
    batch, seq = BATCH_GRID, SEQ_GRID
    if sh.mla == "module":
        try:
            dec_t, pre_t = _table(tables, "generation_mla", used), _table(tables, "context_mla", used)
            match = dict(model=MLA_MODEL, kv_dtype=sh.kv_dtype, gemm_dtype=sh.mla_gemm_dtype)
            dec = lookup.attention_ms(dec_t, match, sh.heads, batch, seq, lookup.DECODE_SEQ_SLOPE)
            pre = lookup.attention_ms(pre_t, match, sh.heads, batch, seq, lookup.PREFILL_SEQ_SLOPE)
            return layers * _s(dec), layers * _s(pre)
        except NotMeasured:
            pass  # the kernel tables and the GEMMs, below
    dec_k, pre_k = _table(tables, "generation_mla_kernel", used), _table(tables, "context_mla_kernel", used)
    gemm, bmm = _table(tables, "gemm", used), _table(tables, "mla_bmm", used)
    match = dict(kv_dtype=sh.kv_dtype)
    dec = _s(lookup.attention_ms(dec_k, match, sh.heads, batch, seq, lookup.DECODE_SEQ_SLOPE))
    pre = _s(lookup.attention_ms(pre_k, match, sh.heads, batch, seq, lookup.PREFILL_SEQ_SLOPE))
    ops = ("mla_gen_pre", "mla_gen_post")
    absorbed = sum(_s(lookup.heads_ms(bmm, dict(op=op, dtype="bfloat16"), sh.heads, batch)) for op in ops)
    per_token_dec = _gemms_s(gemm, sh.mla_decode_gemms, batch) / layers + absorbed
    tokens = (batch[:, None] * seq[None, :]).ravel()
    per_token_pre = (_gemms_s(gemm, sh.mla_prefill_gemms, tokens) / layers).reshape(pre.shape)
    return layers * (dec + per_token_dec[:, None]), layers * pre + layers * per_token_pre


def _experts(
    tables: TableSet, sh: Shapes, distribution: str, gpu: GPU, used: set[str], notes: list[str]
) -> tuple[np.ndarray, float]:
    """(MoE layers · the expert layer at TOKEN_GRID, the measured EP imbalance or 0) (module doc)."""
    assert sh.moe is not None
    m = sh.moe
    wide, _ = tables.table("wideep_moe")
    if m.wide and wide is not None:  # DeepEP's grouped GEMM over the dispatched tokens, where measured
        return _wide_experts(tables, m, used, notes), 0.0
    t = _table(tables, "moe", used)
    if m.dtype == "w4a16_mxfp4" and "w4a8_mxfp4_mxfp8" in set(t.keys["dtype"].tolist()):
        m = replace(m, dtype="w4a8_mxfp4_mxfp8")  # Blackwell: the engines run MXFP4 experts with MXFP8 activations
    shape = dict(hidden=m.hidden, inter=m.inter, topk=m.topk, experts=m.experts)
    ep, tokens = m.moe_ep, TOKEN_GRID
    if ep > WIDE_EP_REFERENCE:  # a rank of ep GPUs at T tokens does the work of an 8-GPU rank at T · 8 / ep
        ep, tokens = WIDE_EP_REFERENCE, TOKEN_GRID * WIDE_EP_REFERENCE / m.moe_ep
        notes.append(f"EP {m.moe_ep}: the measured EP-{WIDE_EP_REFERENCE} expert kernel at its share of the tokens")
        distribution = "balanced"  # the power-law rows' busiest group is an EP-8 one: the layout's imbalance instead
    m = replace(m, moe_ep=ep)
    measured = distribution != "balanced" and m.moe_ep > 1
    cls, scale = shape, 1.0
    try:
        _moe_rows(t, m, shape, distribution, tokens[:1])
    except NotMeasured:
        cls = lookup.nearest_moe_shape(t, m.dtype, distribution, shape)
        scale = _expert_roofline(shape, m.moe_tp, m.moe_ep, gpu) / _expert_roofline(cls, m.moe_tp, m.moe_ep, gpu)
        notes.append(f"MoE shape {shape} not measured: the nearest, {cls}, × the roofline ratio")
    imbalance = _measured_imbalance(t, m, cls, distribution) if measured else 0.0
    if measured:  # the rows time the busiest EP group at T tokens entering; the step asks for imbalance · T
        tokens = tokens / imbalance
        notes.append(f"MoE routing {distribution}: the busiest of {m.moe_ep} EP ranks timed (skew {imbalance:.3g})")
    ms = scale * _moe_rows(t, m, cls, distribution, tokens)
    return m.layers * _s(ms), imbalance


def _moe_rows(t: Table, m, shape: dict, distribution: str, tokens) -> np.ndarray:
    return lookup.moe_ms(t, dict(dtype=m.dtype, distribution=distribution, **shape), m.moe_tp, m.moe_ep, tokens)


def _measured_imbalance(t: Table, m, shape: dict, distribution: str) -> float:
    """The busiest EP rank's routed tokens ÷ the mean under the rows' routing: their time ÷ the balanced rows' far
    past the grid, where both grow ∝ the tokens of the rank (AIConfigurator's collect_moe.py times the EP group
    with the most tokens), within [1, ep]."""
    far = np.array([float(2**30)])
    ratio = float((_moe_rows(t, m, shape, distribution, far) / _moe_rows(t, m, shape, "balanced", far))[0])
    return min(max(ratio, 1.0), float(m.moe_ep))


def _wide_experts(tables: TableSet, m, used: set[str], notes: list[str]):
    """MoE layers · the wide-EP (DeepEP) expert kernel at TOKEN_GRID (its ``uniform`` rows: balanced routing;
    the busiest rank's surplus is the layout's imbalance, applied to the tokens)."""
    t = _table(tables, "wideep_moe", used)
    match = dict(dtype=m.dtype, hidden=m.hidden, inter=m.inter, topk=m.topk, experts=m.experts, distribution="uniform")
    ms = lookup.moe_ms(t, match, m.moe_tp, m.moe_ep, TOKEN_GRID)
    notes.append("data-parallel attention with EP: the wide-EP (DeepEP) expert kernel")
    return m.layers * _s(ms)


def _expert_roofline(shape: dict, moe_tp: int, moe_ep: int, gpu: GPU) -> np.ndarray:
    """max(FLOP / peak, weights hit / bandwidth) of one rank's experts at TOKEN_GRID: only a ratio is used."""
    e, k, d, f = shape["experts"], shape["topk"], shape["hidden"], shape["inter"]
    per_expert = 3.0 * d * f / moe_tp
    hit = (e / moe_ep) * (1.0 - (1.0 - min(k / e, 1.0)) ** TOKEN_GRID)
    flop = 2.0 * per_expert * k * TOKEN_GRID / moe_ep
    weights = hit * per_expert * ACTIVATION_BYTES
    return np.maximum(flop / gpu.peak_for("bf16"), weights / gpu.memory_bandwidth_bytes_per_s)


def _allreduce(tables: TableSet, sh: Shapes, variant: str) -> np.ndarray:
    """One all-reduce of T·d·2 B over tp GPUs at TOKEN_GRID (s); NaN where not measured."""
    if sh.tp <= 1:
        return np.zeros_like(TOKEN_GRID)
    message = TOKEN_GRID * sh.hidden * ACTIVATION_BYTES
    t, _ = tables.table("allreduce")
    try:
        if t is not None:
            return _s(lookup.collective_ms(t, dict(dtype="bfloat16", variant=variant), sh.tp, message))
        t, _ = tables.table("nccl", collective=True)
        if t is not None:
            return _s(lookup.collective_ms(t, dict(op="all_reduce", dtype="half"), sh.tp, message))
    except NotMeasured:
        pass
    return np.full_like(TOKEN_GRID, np.nan)


def _build(tables: TableSet, sh: Shapes, distribution: str, gpu: GPU) -> KernelCurves:
    used: set[str] = set()
    notes: list[str] = []
    gemm = _table(tables, "gemm", used)
    tokens = _gemms_s(gemm, sh.gemms, TOKEN_GRID)
    experts, imbalance = (
        _experts(tables, sh, distribution, gpu, used, notes) if sh.moe is not None else (np.zeros_like(TOKEN_GRID), 0.0)
    )
    if sh.mla:
        decode, prefill = _mla_grids(tables, sh, used)
    else:
        decode = _attention_grid(_table(tables, "generation_attention", used), sh, lookup.DECODE_SEQ_SLOPE, True)
        prefill = _attention_grid(_table(tables, "context_attention", used), sh, lookup.PREFILL_SEQ_SLOPE, False)
    sources = " + ".join(sorted(used))
    # a ceiling's tables bound these point by point (docs/kernel_tables.md "Kernel ceilings"): the basis says so
    bound = "" if tables.ceiling is None else f", bounded by {tables.ceiling.gpu}"
    return KernelCurves(
        label=f"measured kernels ({sources}, {gpu.name}{bound})",
        tokens=_rising(tokens),
        experts=_rising(experts),
        head=_rising(_s(lookup.gemm_ms(gemm, sh.head.dtype, sh.head.n, sh.head.k, TOKEN_GRID))),
        decode=_rising(_rising(decode, 0), 1),
        prefill=_rising(_rising(prefill, 0), 1),
        allreduce_graph=_rising(_allreduce(tables, sh, "graph")),
        allreduce_eager=_rising(_allreduce(tables, sh, "eager")),
        notes=tuple(notes),
        ep_imbalance=imbalance,
    )


def _rising(curve: np.ndarray, axis: int = -1) -> np.ndarray:
    """Non-decreasing along ``axis``: each point the least time of any point at or above it — a step over fewer
    tokens, sequences or keys can always run the larger kernel padded (an engine pads to its CUDA-graph sizes),
    and the sizing search's bisection needs a monotone step; measured tables dip at tile boundaries.  NaN (not
    measured) stays NaN."""
    if np.all(np.isnan(curve)):
        return curve
    flipped = np.flip(curve, axis=axis)
    return np.flip(np.fmin.accumulate(flipped, axis=axis), axis=axis)
