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

``config_problems`` words each broken rule with the values that would pass; ``fit_defaults``
moves a length or chunk the user left at its default so it does not break a rule the user's own
values set up; ``config_valid`` is the same test over arrays (sweeps, grids, searches).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from planner.engine.inputs import Array, EngineInputs, MetricValue
from planner.format import fmt_count
from planner.model.quantization import VOCAB_PADDING, scheme_for
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec

MAX_TP = 64
_DEFAULTS = Scenario()


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


def tp_problems(m: ModelSpec, tp: int, group: int = 0) -> list[str]:
    """Why vLLM cannot split ``m`` over ``tp`` GPUs (empty: it can)."""
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
        if width % tp:
            out.append(f"its {what} ({fmt_count(width)}) is not divisible by {tp}")
    if group and not out and not m.is_mla:
        shares = [m.heads * m.head_dim // tp] + [w // tp for w, _ in widths]
        if any(w % group for w in shares):
            out.append(f"a rank's share of a quantised matrix is not a whole number of {group}-weight groups")
    return out


def valid_tps(m: ModelSpec, group: int = 0, draft: ModelSpec | None = None, limit: int = MAX_TP) -> list[int]:
    """Every tp from 1 to ``limit`` that vLLM accepts for ``m`` (and its draft)."""
    return [
        tp
        for tp in range(1, limit + 1)
        if not tp_problems(m, tp, group) and (draft is None or not tp_problems(draft, tp))
    ]


def quant_group(s: Scenario) -> int:
    """The group size the scenario's quantisation splits weights into (0: none)."""
    scheme = scheme_for(s.wdtype, s.quant)
    return s.qgroup if scheme.scale in ("group", "group_zero") else 0


def quant_problems(s: Scenario) -> list[str]:
    """A ``quant`` layout that does not store ``wdtype`` weights."""
    from planner.model.quantization import SCHEMES, compatible_quants

    if not s.quant or s.quant == "none" and s.wdtype in ("bf16", "fp16"):
        return []
    if s.quant == "none" or SCHEMES[s.quant].wdtype != s.wdtype:
        allowed = ", ".join(compatible_quants(s.wdtype))
        return [f"quant={s.quant}: does not store wdtype={s.wdtype} weights; for {s.wdtype} use one of {allowed}"]
    return []


def config_problems(m: ModelSpec, s: Scenario, draft: ModelSpec | None = None) -> list[str]:
    """One line per rule of the module doc that the scenario breaks, with the values that pass."""
    problems = quant_problems(s)
    group = quant_group(s) if not problems else 0
    broken = tp_problems(m, s.tp, group)
    if draft is not None:
        broken += [f"the draft {draft.name}'s {p.removeprefix('its ')}" for p in tp_problems(draft, s.tp)]
    if broken:
        ok = valid_tps(m, group, draft)
        problems.append(
            f"tp={s.tp}: vLLM cannot split {m.name} over {s.tp} GPUs: "
            + "; ".join(broken)
            + "; valid tp: "
            + (", ".join(map(str, ok)) if ok else "none up to 64")
        )
    if s.batch > s.chunk:
        problems.append(
            f"batch={s.batch} > chunk={s.chunk}: vLLM needs max_num_batched_tokens (chunk) ≥ max_num_seqs (batch); "
            f"raise chunk to at least {s.batch} or lower batch to at most {s.chunk}"
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
    if s.batch > s.chunk and s.chunk == _DEFAULTS.chunk:
        changes["chunk"] = s.batch
        notes.append(f"chunk (max_num_batched_tokens) raised from its default {s.chunk} to batch={s.batch}")
    elif s.batch > s.chunk and s.batch == _DEFAULTS.batch:
        changes["batch"] = s.chunk
        notes.append(f"batch (max_num_seqs) lowered from its default {s.batch} to chunk={s.chunk}")
    return (s.with_changes(**changes) if changes else s), notes


def kv_replication_note(m: ModelSpec, tp: int) -> str | None:
    """When tp > KV heads vLLM replicates them: each GPU holds one KV head."""
    if m.is_mla or tp <= m.kv_heads:
        return None
    return (
        f"tp={tp} > {m.kv_heads} KV heads: vLLM replicates them, each GPU holds 1 KV head "
        f"({tp // m.kv_heads} copies of each), so the KV cache per GPU does not shrink past tp={m.kv_heads}"
    )


def _divides(n: Array, d: Array) -> Array:
    return np.mod(n, d) == 0


def config_valid(x: EngineInputs) -> MetricValue:
    """The module doc's rules over arrays (the draft's heads included when it has one)."""
    tp = np.maximum(x.tp, 1.0)
    kv_ok = np.where(tp <= x.kv_heads, _divides(x.kv_heads, tp), _divides(tp, x.kv_heads))
    vocab = np.ceil(x.vocab / VOCAB_PADDING) * VOCAB_PADDING
    ok = _divides(x.heads, tp) & ((x.kv_sharded == 0) | kv_ok) & _divides(vocab, tp)
    ok = ok & ((x.dense_layers_count == 0) | _divides(x.ffn, tp))
    ok = ok & ((x.moe_ffn == 0) | _divides(x.moe_ffn, tp))
    group = np.where(x.quant_group > 0, x.quant_group, 1.0)
    share_ok = _divides(x.heads * x.head_dim / tp, group) & ((x.dense_layers_count == 0) | _divides(x.ffn / tp, group))
    share_ok = share_ok & ((x.moe_ffn == 0) | _divides(x.moe_ffn / tp, group))
    ok = ok & ((x.quant_group == 0) | (x.kv_sharded == 0) | share_ok)
    draft_kv = np.where(tp <= x.draft_kv_heads, _divides(x.draft_kv_heads, tp), _divides(tp, x.draft_kv_heads))
    draft_vocab = np.ceil(x.draft_vocab / VOCAB_PADDING) * VOCAB_PADDING
    ok = ok & ((x.has_draft_model == 0) | (_divides(x.draft_heads, tp) & draft_kv & _divides(draft_vocab, tp)))
    ok = ok & (x.batch <= x.chunk_tokens)
    ok = ok & (x.prompt_tokens + x.output_tokens <= x.context_window_tokens)
    return np.asarray(ok)
