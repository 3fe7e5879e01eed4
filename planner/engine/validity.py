"""Configurations the serving engine accepts, and defaults that follow what the user typed.

vLLM 0.19 refuses to start (file:line of the check):
  tp must divide the attention heads         config/model.py:1109-1116  ``verify_with_parallel_config``
  KV heads: g % tp == 0 when tp ≤ g, else tp % g == 0 (heads replicate)   models/llama.py:147-155 (per model)
  the vocabulary padded to a multiple of 64 must divide by tp   vocab_parallel_embedding.py → ``divide``
  the MLP width (dense FFN, each expert's FFN) must divide by tp  linear.py ColumnParallelLinear → ``divide``
  a GPTQ/AWQ/W4A16 group must not straddle ranks: (f/tp) and (h·k/tp) divisible by the group   gptq_marlin.py
  max_num_batched_tokens (chunk) ≥ max_num_seqs (batch)       config/scheduler.py:273-278
  max_model_len (prompt + output) ≤ the model's context window  config/model.py:2045-2181
MLA models replicate their latent, so the KV-head rule does not apply to them.
FP8 block-quantised weights (128 × 128): a rank's share of each MLP width must be whole blocks
  ("The output_size of gate's and up's weight = … is not divisible by weight quantization block_n = 128",
  quantization/fp8.py:625-649) — DeepSeek-V3's 2,048-wide experts allow at most 16 slices
Parallel layouts (tp · dp · pp GPUs; planner/engine/parallel.py), per engine:
  pp ≤ layers (each stage holds a layer; TensorRT-LLM "pp size cannot be larger than num_hidden_layers")
  ep > 1 needs routed experts ("Number of experts in the model must be greater than 0 when expert
    parallelism is enabled", config/model.py:1058-1063); dp > 1 (data-parallel attention) an MoE model in
    SGLang and TensorRT-LLM; vLLM's ``vllm serve --data-parallel-size`` also takes a dense model and runs its
    ranks as independent engines ("Non-MoE DP ranks are completely independent, so treat like DP=1",
    v1/engine/core.py:1076 in 0.19.0, :1551 in 0.33.0; only the offline SPMD mode refuses it, "Offline data
    parallel mode is not supported/useful for dense models", config/parallel.py:689-693)
  SGLang's n-gram speculation refuses data-parallel attention (arg_groups/speculative_hook.py, 0.5.23)
  vLLM: ep = 1 or tp · dp (--enable-expert-parallel: "EP_SIZE = TP_SIZE × DP_SIZE", fused_moe/config.py)
  SGLang, TensorRT-LLM: ep divides tp · dp (moe_tp × moe_ep = tp_size; SGLang's DeepEP needs ep = tp_size)
  ep ≤ experts; with EPLB (and always in SGLang) the E + r experts (r redundant copies, EPLB only: "Redundant
    experts are only supported with EPLB") split evenly over ep ("EPLB currently only supports even
    distribution of experts across ranks", fused_moe/layer.py:318 in 0.19.0, :271-284 in 0.33.0, inside
    ``if enable_eplb``; without EPLB the first E mod ep ranks hold one expert more, expert_map_manager.py:68)
  each expert's FFN divides by moe_tp = tp · dp / ep; an engine's batch / dp ≤ chunk

``config_problems`` words each broken rule with the values that would pass; ``fit_defaults``
moves a length or chunk the user left at its default so it does not break a rule the user's own
values set up; ``config_valid`` is the same test over arrays (sweeps, grids, searches).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.engine.defaults import sglang_ngram
from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.format import fmt_count
from planner.model.engine_versions import engine_name
from planner.model.quant_support import (
    FAMILY_LABELS,
    attention_problem,
    kv_problem,
    weight_support,
    weight_support_row,
)
from planner.model.quantization import COMPONENTS, SCHEMES, VOCAB_PADDING, compatible_quants
from planner.model.scenario import Scenario
from planner.model.specs import GPU, ModelSpec
from planner.model.weight_plan import ResolvedWeights, resolve_weights, weight_problems

MAX_TP = 64
ENGINE_LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
_DEFAULTS = Scenario()
#: A shape with no checkpoint: what ``quant_block``/``quant_group`` resolve a scenario against without its model.
_NO_CHECKPOINT = ModelSpec(
    name="-", layers=1, hidden=1, heads=1, kv_heads=1, head_dim=1, ffn=1, vocab=1, context_window_tokens=1
)


def _padded_vocab(vocab: int) -> int:
    return math.ceil(vocab / VOCAB_PADDING) * VOCAB_PADDING


def _mlp_widths(m: ModelSpec) -> list[tuple[int, str]]:
    """The MLP widths vLLM splits over tp: the dense FFN (if any layer is dense), each expert's FFN."""
    widths = []
    if not m.is_moe or m.dense_layers > 0:
        widths.append((m.ffn, "FFN width"))
    if m.is_moe:
        widths.append((m.moe_ffn, "expert FFN width"))
    return widths


def tp_problems(m: ModelSpec, tp: int, group: int = 0, expert_tp: int | None = None, block: int = 0) -> list[str]:
    """Why vLLM cannot split ``m`` over ``tp`` GPUs (empty: it can); the experts' FFN over ``expert_tp``
    (moe_tp = tp · dp / ep; default tp); ``block``: FP8 block quantisation's 128 (0: none)."""
    out = []
    if m.heads % tp:
        out.append(f"its {m.heads} attention heads are not divisible by {tp}")
    if not m.is_mla:
        g = m.kv_heads
        if (tp <= g and g % tp) or (tp > g and tp % g):
            out.append(f"its {g} KV heads are not divisible by {tp}" + (f" (nor {tp} by {g})" if tp > g else ""))
    vocab = _padded_vocab(m.vocab)
    if vocab % tp:
        out.append(f"its vocabulary padded to a multiple of 64 ({fmt_count(vocab)}) is not divisible by {tp}")
    widths = _mlp_widths(m)
    for width, what in widths:
        split = tp if what == "FFN width" or expert_tp is None else expert_tp
        if width % split:
            out.append(f"its {what} ({fmt_count(width)}) is not divisible by {split}")
        elif block and (width // split) % block:
            out.append(
                f"a rank's share of its {what} ({fmt_count(width)} / {split} = {fmt_count(width // split)}) is not "
                f"a whole number of {block}-wide FP8 blocks"
            )
    if group and not out and not m.is_mla:
        shares = [m.heads * m.head_dim // tp] + [w // tp for w, _ in widths]
        if any(w % group for w in shares):
            out.append(f"a rank's share of a quantised matrix is not a whole number of {group}-weight groups")
    return out


def valid_tps(
    m: ModelSpec,
    group: int = 0,
    draft: ModelSpec | None = None,
    limit: int = MAX_TP,
    block: int = 0,
    dp: int = 1,
    expert_parallel: bool = False,
) -> list[int]:
    """Every tp from 1 to ``limit`` that vLLM accepts for ``m`` (and its draft), at ``dp`` data-parallel ranks
    with the experts sliced over tp · dp (or, ``expert_parallel``, spread whole over them)."""
    return [
        tp
        for tp in range(1, limit + 1)
        if not tp_problems(m, tp, group, 1 if expert_parallel else tp * dp, block)
        and (draft is None or not tp_problems(draft, tp))
    ]


def quant_block(s: Scenario, m: ModelSpec | None = None) -> int:
    """The FP8 block size of the scenario's quantisation (128 where a component is fp8-block; 0: none)."""
    return _weights(s, m).fmt.block


def quant_group(s: Scenario, m: ModelSpec | None = None) -> int:
    """The group size the scenario's quantisation splits weights into (0: none)."""
    fmt = _weights(s, m).fmt
    return fmt.group if fmt.grouped else 0


def _weights(s: Scenario, m: ModelSpec | None) -> ResolvedWeights:
    if m is None:  # the link's own format only (no checkpoint to fall back to)
        return resolve_weights(_NO_CHECKPOINT, s)
    return resolve_weights(m, s)


def quant_problems(s: Scenario) -> list[str]:
    """A ``quant`` layout that does not store ``wdtype`` weights."""
    if not s.quant or not s.wdtype or s.quant == "none" and s.wdtype in ("bf16", "fp16"):
        return []
    if s.quant == "none" or SCHEMES[s.quant].wdtype != s.wdtype:
        allowed = ", ".join(compatible_quants(s.wdtype))
        return [f"quant={s.quant}: does not store wdtype={s.wdtype} weights; for {s.wdtype} use one of {allowed}"]
    return []


def _families(engine: str, quant: str) -> str:
    """The GPU families ``engine`` runs ``quant`` weights on, in words."""
    rows = [fam for fam in FAMILY_LABELS if fam != "unknown" and weight_support_row(engine, quant, fam).runs]
    return "; ".join(FAMILY_LABELS[f] for f in rows) or "none"


def format_notes(m: ModelSpec, s: Scenario, gpu: GPU, engine: str) -> list[str]:
    """What the engine does differently from the format's own kernels here (weight-only fallbacks), and an FP8
    KV cache on Hopper under vLLM (FlashAttention 3 then runs attention in FP8; the plan prices it at 16 bit
    unless attn_dtype=fp8)."""
    w = resolve_weights(m, s)
    out = []
    seen = set()
    for component, scheme in zip(COMPONENTS, w.fmt.schemes, strict=True):
        if scheme.key == "none" or (component == "experts" and not m.is_moe) or scheme.key in seen:
            continue
        support = weight_support(engine, scheme.key, gpu)
        if support.mode == "weight-only" and support.reason:
            seen.add(scheme.key)
            out.append(
                f"{scheme.key} weights on {gpu.name}: {support.reason}; the plan streams them at {scheme.key}'s "
                "bytes and "
                f"prices their arithmetic at the 16-bit peak ({support.kernel})"
            )
    if (
        w.checkpoint is not None
        and w.checkpoint.gpus
        and w.checkpoint.quantised
        and not any(weight_support(engine, sc.key, gpu).mode == "native" for sc in w.fmt.schemes if sc.key != "none")
    ):
        out.append(f"{w.checkpoint.repo} is published for {w.checkpoint.gpus} GPUs")
    return out


def format_problems(m: ModelSpec, s: Scenario, gpu: GPU, engine: str, engine_version: str) -> list[str]:
    """Formats the engine refuses on this GPU (``planner.model.quant_support``), each with where they run."""
    w = resolve_weights(m, s)
    out = []
    refused: dict[str, list[str]] = {}
    for component, scheme in zip(COMPONENTS, w.fmt.schemes, strict=True):
        if scheme.key == "none" or (component == "experts" and not m.is_moe):
            continue
        if not weight_support(engine, scheme.key, gpu).runs:
            refused.setdefault(scheme.key, []).append(component)
    for key, parts in refused.items():
        reason = weight_support(engine, key, gpu).reason
        out.append(
            f"{key} weights ({', '.join(parts)}) on {gpu.name}: {ENGINE_LABELS.get(engine_name(engine), engine)} "
            f"refuses them — {reason}; {key} runs on: {_families(engine, key)}; or pick another format "
            "(wdtype/quant, ckpt, quant_attn/quant_mlp/quant_experts)"
        )
    kv = kv_problem(engine, engine_version, w.kvdtype, m.is_mla)
    if kv:
        out.append(kv)
    att = attention_problem(w.attn_dtype, w.kvdtype, gpu)
    if att:
        out.append(att)
    return out


def engine_rules(engine: str) -> str:
    """The engine whose layout rules apply: sglang, trtllm, else vLLM's (``engine``: a link's key, any version)."""
    name = engine_name(engine)
    return name if name in ("sglang", "trtllm") else "vllm"


def valid_eps(m: ModelSpec, tp: int, dp: int, engine: str = "vllm", eplb: bool = True, redundant: int = 0) -> list[int]:
    """Every ep the engine accepts for ``m`` on a stage of tp · dp GPUs, with ``redundant`` extra experts
    (module doc)."""
    n = tp * dp
    if not m.is_moe:
        return [1]
    rule = engine_rules(engine)
    grid = [1, n] if rule == "vllm" and n > 1 else [e for e in range(1, n + 1) if n % e == 0]
    even = rule == "sglang" or eplb
    total = m.experts + redundant
    return [e for e in grid if e == 1 or (e <= total and (not even or total % e == 0))]


def layout_problems(m: ModelSpec, s: Scenario) -> list[str]:
    """One line per layout rule of the module doc that the scenario's pp, ep and dp break."""
    out = []
    rule = engine_rules(s.engine)
    if s.pp > m.layers:
        out.append(f"pp={s.pp}: {m.name} has {m.layers} layers and each stage needs one; valid pp: 1 … {m.layers}")
    if s.dp > 1 and not m.is_moe and rule != "vllm":
        name = "SGLang" if rule == "sglang" else "TensorRT-LLM"
        out.append(
            f"dp={s.dp}: {name}'s data-parallel attention ranks share MoE layers, and {m.name} is dense: serve it as "
            f"{s.dp} replicas instead (sizing counts replicas; vLLM runs dense --data-parallel-size ranks as "
            "independent engines); valid dp: 1"
        )
    if s.dp > 1 and rule == "sglang" and sglang_ngram(s):
        out.append(
            f"dp={s.dp}: SGLang's n-gram speculation does not support data-parallel attention ('Currently ngram "
            "speculative decoding does not support dp attention', arg_groups/speculative_hook.py _handle_ngram, "
            "0.5.23); valid dp: 1, or a draft model (draft=…) or another spec_method"
        )
    if s.ep > 1 and not m.is_moe:
        out.append(f"ep={s.ep}: {m.name} has no experts to split (expert parallelism needs an MoE model); valid ep: 1")
    elif s.ep > 1 and s.ep not in valid_eps(m, s.tp, s.dp, s.engine, s.eplb, s.redundant_experts):
        out.append(
            f"ep={s.ep}: {_ep_reason(m, s, rule)}; valid ep at tp={s.tp}, dp={s.dp}: "
            + ", ".join(map(str, valid_eps(m, s.tp, s.dp, s.engine, s.eplb, s.redundant_experts)))
        )
    if s.redundant_experts and not (m.is_moe and s.ep > 1 and s.eplb):
        out.append(
            f"redundant_experts={s.redundant_experts}: redundant experts are EPLB's (vLLM: 'Redundant experts are "
            "only supported with EPLB'): they need an MoE model, ep > 1 and eplb=1; valid redundant_experts: 0"
        )
    return out


def _ep_reason(m: ModelSpec, s: Scenario, rule: str) -> str:
    n = s.tp * s.dp
    if rule == "vllm" and s.ep != n:
        return f"vLLM's --enable-expert-parallel spreads the experts over all tp × dp = {n} GPUs of a stage"
    if rule != "vllm" and n % s.ep:
        name = "SGLang" if rule == "sglang" else "TensorRT-LLM"
        return f"{name} needs ep to divide tp × dp = {n}"
    total = m.experts + s.redundant_experts
    if s.ep > total:
        return f"{m.name} has {total} experts, fewer than {s.ep} ranks"
    needs = "SGLang requires" if rule == "sglang" else "EPLB requires (eplb=0 places ⌈E/ep⌉ on the first ranks)"
    extra = f" + {s.redundant_experts} redundant" if s.redundant_experts else ""
    return (
        f"its {m.experts}{extra} experts do not split evenly over {s.ep} ranks, which {needs}; redundant_experts "
        "adds copies so they do (SGLang's 288 = 256 + 32 allow 12, 24, 36, 72, 96 …)"
    )


def config_problems(m: ModelSpec, s: Scenario, draft: ModelSpec | None = None) -> list[str]:
    """One line per rule of the module doc that the scenario breaks, with the values that pass."""
    problems = quant_problems(s) + weight_problems(m, s)
    group = quant_group(s, m) if not problems else 0
    block = quant_block(s, m) if not problems else 0
    layout = layout_problems(m, s)
    problems += layout
    expert_tp = s.tp * s.dp // s.ep if not layout else s.tp
    broken = tp_problems(m, s.tp, group, expert_tp, block)
    if draft is not None:
        broken += [f"the draft {draft.name}'s {p.removeprefix('its ')}" for p in tp_problems(draft, s.tp)]
    if broken:
        ok = valid_tps(m, group, draft, block=block, dp=s.dp, expert_parallel=s.ep > 1)
        problems.append(
            f"tp={s.tp}: vLLM cannot split {m.name} over {s.tp} GPUs: "
            + "; ".join(broken)
            + "; valid tp: "
            + (", ".join(map(str, ok)) if ok else "none up to 64")
        )
    per_engine = -(-s.batch // s.dp)
    if per_engine > s.chunk:
        each = f" (batch / dp = {per_engine} per data-parallel engine)" if s.dp > 1 else ""
        problems.append(
            f"batch={s.batch} > chunk={s.chunk}{each}: vLLM needs max_num_batched_tokens (chunk) ≥ max_num_seqs "
            f"(batch); raise chunk to at least {per_engine} or lower batch to at most {s.chunk * s.dp}"
        )
    ctx = s.prompt + s.output
    if ctx > m.context_window_tokens:
        room = m.context_window_tokens - s.output
        fix = f"at most {fmt_count(room)} prompt tokens with output={s.output}" if room >= 1 else "a shorter output"
        problems.append(
            f"prompt={s.prompt} + output={s.output} = {fmt_count(ctx)} tokens exceed {m.name}'s "
            f"{fmt_count(m.context_window_tokens)}-token context window (vLLM's max_model_len limit); use {fix}"
        )
    return problems


def fit_defaults(s: Scenario, m: ModelSpec) -> tuple[Scenario, list[str]]:
    """``s`` with the lengths and chunk the user left at their defaults moved so they break no rule
    with what the user typed; one note per move.  (A value equal to its default counts as not typed,
    as in a link, which omits it.)"""
    changes: dict[str, Any] = {}
    notes = []
    window = m.context_window_tokens
    if s.prompt + s.output > window:
        p_default, o_default = s.prompt == _DEFAULTS.prompt, s.output == _DEFAULTS.output
        if p_default and window - s.output >= 1:
            changes["prompt"] = window - s.output
        elif o_default and not p_default and window - s.prompt >= 1:
            changes["output"] = window - s.prompt
        elif p_default and o_default:
            changes["prompt"], changes["output"] = window - window // 8, window // 8
        if changes:
            said = ", ".join(f"{k}={v}" for k, v in changes.items())
            notes.append(
                f"the default lengths exceed {m.name}'s {fmt_count(window)}-token context window: using {said}"
            )
    per_engine = -(-s.batch // s.dp)
    if per_engine > s.chunk and s.chunk == _DEFAULTS.chunk:
        changes["chunk"] = per_engine
        notes.append(f"chunk (max_num_batched_tokens) raised from its default {s.chunk} to batch={per_engine}")
    elif per_engine > s.chunk and s.batch == _DEFAULTS.batch:
        changes["batch"] = s.chunk * s.dp
        notes.append(f"batch (max_num_seqs) lowered from its default {s.batch} to chunk={s.chunk * s.dp}")
    return (s.with_changes(**changes) if changes else s), notes


def kv_replication_note(m: ModelSpec, tp: int) -> str | None:
    """When tp > KV heads vLLM replicates them: each GPU holds one KV head."""
    if m.is_mla or tp <= m.kv_heads:
        return None
    return (
        f"tp={tp} > {m.kv_heads} KV heads: vLLM replicates them, each GPU holds 1 KV head "
        f"({tp // m.kv_heads} copies of each), so the KV cache per GPU does not shrink past tp={m.kv_heads}"
    )


def kv_replication_sentence(m: ModelSpec, tp: int) -> str:
    """``kv_replication_note`` as a sentence beside its effect (the concurrency card and chart), "" when it
    does not apply."""
    note = kv_replication_note(m, tp)
    return f" {note[0].upper()}{note[1:]}: concurrency stops rising with tp there." if note else ""


def _divides(n: Array, d: Array) -> Array:
    return np.mod(n, d) == 0


def _layout_valid(x: EngineInputs) -> MetricValue:
    """The layout rules of the module doc over arrays (mem_rule: 0 vLLM, 1 SGLang, 2 TensorRT-LLM)."""
    n = x.tp * x.dp
    moe = x.experts > 0
    grid = np.where(x.mem_rule == 0, (x.ep == 1) | (x.ep == n), _divides(n, x.ep))
    total = x.experts + x.redundant_experts
    even = (x.ep == 1) | ((x.mem_rule != 1) & (x.eplb == 0)) | _divides(total, x.ep)
    dense_dp = (x.dp == 1) | moe | (x.mem_rule == 0)  # vLLM: dense DP ranks are independent engines
    ok = (x.pp <= x.layers) & dense_dp & ((x.ep == 1) | (moe & (x.ep <= total) & grid & even))
    ok = ok & ((x.redundant_experts == 0) | (moe & (x.ep > 1) & (x.eplb > 0)))
    expert_tp = np.maximum(n / x.ep, 1.0)
    ok = ok & ((x.moe_ffn == 0) | _divides(x.moe_ffn, expert_tp))
    block = np.where(x.quant_block > 0, x.quant_block, 1.0)
    blocks_ok = ((x.dense_layers_count == 0) | _divides(x.ffn / x.tp, block)) & (
        (x.moe_ffn == 0) | _divides(x.moe_ffn / expert_tp, block)
    )
    return ok & ((x.quant_block == 0) | blocks_ok)


def config_valid(x: EngineInputs) -> MetricValue:
    """The module doc's rules over arrays (the draft's heads included when it has one)."""
    tp = np.maximum(x.tp, 1.0)
    kv_ok = np.where(tp <= x.kv_heads, _divides(x.kv_heads, tp), _divides(tp, x.kv_heads))
    vocab = np.ceil(x.vocab / VOCAB_PADDING) * VOCAB_PADDING
    ok = _divides(x.heads, tp) & ((x.kv_sharded == 0) | kv_ok) & _divides(vocab, tp)
    ok = ok & ((x.dense_layers_count == 0) | _divides(x.ffn, tp))
    expert_tp = tp * x.dp / x.ep
    group = np.where(x.quant_group > 0, x.quant_group, 1.0)
    share_ok = _divides(x.heads * x.head_dim / tp, group) & ((x.dense_layers_count == 0) | _divides(x.ffn / tp, group))
    share_ok = share_ok & ((x.moe_ffn == 0) | _divides(x.moe_ffn / expert_tp, group))
    ok = ok & ((x.quant_group == 0) | (x.kv_sharded == 0) | share_ok)
    draft_kv = np.where(tp <= x.draft_kv_heads, _divides(x.draft_kv_heads, tp), _divides(tp, x.draft_kv_heads))
    draft_vocab = np.ceil(x.draft_vocab / VOCAB_PADDING) * VOCAB_PADDING
    ok = ok & ((x.has_draft_model == 0) | (_divides(x.draft_heads, tp) & draft_kv & _divides(draft_vocab, tp)))
    ok = ok & tp_free_valid(x)
    return np.asarray(ok & _layout_valid(x))


def tp_free_valid(x: EngineInputs) -> MetricValue:
    """The rules of ``config_valid`` that no tp changes: each engine's batch / dp ≤ chunk, prompt + output ≤ the
    context window (a scenario that breaks one is refused at every tp: ``memory.min_tp_that_fits`` skips it)."""
    return (np.ceil(x.batch / x.dp) <= x.chunk_tokens) & (x.prompt_tokens + x.output_tokens <= x.context_window_tokens)
