"""The simulator's step time on measured kernels: ``kernel_step`` for one scenario, made fast.

A step of ``seqs`` decodes (q tokens each) at the mean context ``ctx`` plus prefill chunks j of n_j new
tokens after p_j cached (``step_time`` module doc), on the curves of ``planner.kernels.curves``:

  time = t_0 + tokens(T) + experts(T) + head(seqs·q + #chunks) + e·T
         + decode(seqs, ctx) · ρ_q + Σ_j prefill(1, S_eq(n_j, p_j)) + n_AR · allreduce(T)

in plain Python floats (the curves as lists; linear in log₂ between grid points, as ``curves.at_tokens``).
With at most one chunk it is ``roofline.step_cost`` on the kernel basis (tests: to 1e-9).  ρ_q, and the
all-reduces where the table has no such GPU count, come from the scenario's roofline coefficients
(``step_time.Roofline``).  A layout beyond one node's tensor parallelism (pipeline stages, data-parallel
attention, expert parallelism) is timed by ``roofline.step_cost`` itself, one call per step.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from planner.engine import parallel
from planner.engine.inputs import EngineInputs
from planner.engine.roofline import step_cost
from planner.kernels import curves as kc


def _scalar(v) -> float:
    return float(np.asarray(v, dtype=float).reshape(-1)[0])


def _at(curve: list[float], v: float, per_octave: int) -> float:
    """``curve`` at v > 0 (``curves.at_tokens`` in floats; ∝ v beyond the grid)."""
    u = math.log2(v) * per_octave if v > 1.0 else 0.0
    n = len(curve)
    i = min(int(u), n - 2)
    f = min(u - i, 1.0)
    y = curve[i] + f * (curve[i + 1] - curve[i])
    last = 2.0 ** ((n - 1) / per_octave)
    return y * (v / last) if v > last else y


def _equivalent_prompt_tokens(new: float, past: float) -> float:
    """``kernel_step.equivalent_prompt_tokens`` of one chunk in floats: the same operations (a square root is
    correctly rounded in ``math`` as in NumPy), without a NumPy scalar."""
    work = new * (past + (new + 1.0) / 2.0)
    return (math.sqrt(1.0 + 8.0 * work) - 1.0) / 2.0


def _at2(flat: list[float], batch: float, seq: float, power: float) -> float:
    """A 2-D curve at (batch, seq) (``curves.at_grid`` in floats)."""
    nb, ns, per = kc.BATCH_GRID.size, kc.SEQ_GRID.size, kc.GRID_PER_OCTAVE
    ub = math.log2(batch) * per if batch > 1.0 else 0.0
    us = math.log2(seq) * per if seq > 1.0 else 0.0
    ib, is_ = min(int(ub), nb - 2), min(int(us), ns - 2)
    fb, fs = min(ub - ib, 1.0), min(us - is_, 1.0)
    b0 = ib * ns + is_
    lo = flat[b0] + fs * (flat[b0 + 1] - flat[b0])
    hi = flat[b0 + ns] + fs * (flat[b0 + ns + 1] - flat[b0 + ns])
    y = lo + fb * (hi - lo)
    lb, ls = 2.0 ** ((nb - 1) / per), 2.0 ** ((ns - 1) / per)
    if batch > lb:
        y *= batch / lb
    if seq > ls:
        y *= (seq / ls) ** power
    return y


@dataclass(frozen=True)
class MeasuredStep:
    """One scenario's measured-kernel step (module doc); ``inputs`` for the layouts' ``step_cost`` path."""

    inputs: EngineInputs
    plain: bool  # one node's tensor parallelism: the float path below
    tokens: list[float]
    experts: list[float] | None
    head: list[float]
    decode: list[float]
    decode_array: np.ndarray  # the same, for the vectorised runs of decode steps
    prefill: list[float]
    allreduce_graph: list[float]
    allreduce_eager: list[float]
    n_allreduce: float
    elementwise_s_per_token: float
    host_s_per_seq: float  # a step lasts at least this × its sequences (``efficiency.host_bound_s``)
    overhead_s: float  # t_step + L · t_layer (a step with prefill tokens)
    decode_overhead_s: float  # t_step + L · t_layer,decode
    decode_attn_s: float  # the roofline's decode attention coefficients (ρ_q): FLOP-time per query per key …
    kv_decode_s: float  # … and KV-read time per sequence per key (× the attended layer-keys)
    keys_per_ctx: float  # full layers (window layers add min(ctx, W))
    window_layers: float
    window_tokens: float
    comm_fixed_s: float  # the roofline's all-reduces (where the table has no such GPU count)
    comm_s_per_token: float
    #: ``decode_time_s``'s token terms per decode token count (a cache: filled as the simulator asks)
    _decode_fixed: dict[float, float] = field(default_factory=dict, compare=False, repr=False)
    #: ``scalar_time_s``'s token terms per (tokens, logits, with chunks) (a cache, as ``_decode_fixed``)
    _token_terms: dict[tuple[float, float, bool], tuple[float, float]] = field(
        default_factory=dict, compare=False, repr=False
    )
    #: ``_decode_attention_s``'s last lookup
    _last_decode: list[tuple[float, float, float] | None] = field(
        default_factory=lambda: [None], compare=False, repr=False
    )

    @classmethod
    def from_inputs(cls, x: EngineInputs, roofline) -> MeasuredStep:
        """``roofline``: the scenario's ``step_time.Roofline`` (its attention and comm coefficients)."""
        c = kc.curves(_scalar(x.kernel_set), _scalar(x.tp), _scalar(x.ep), _scalar(x.dp))
        if c is None:
            raise ValueError("MeasuredStep needs a scenario whose kernels are measured at its layout")
        moe = _scalar(x.experts) > 0
        return cls(
            inputs=x,
            plain=parallel.simple(x),
            tokens=c.tokens.tolist(),
            experts=(c.experts * _scalar(x.moe_time_ratio)).tolist() if moe else None,
            head=c.head.tolist(),
            decode=c.decode.ravel().tolist(),
            decode_array=c.decode.ravel(),
            prefill=c.prefill.ravel().tolist(),
            allreduce_graph=c.allreduce_graph.tolist(),
            allreduce_eager=c.allreduce_eager.tolist(),
            n_allreduce=_scalar(parallel.tp_allreduces(x)) if _scalar(x.tp) > 1 else 0.0,
            elementwise_s_per_token=_scalar(x.elementwise_s_per_token) / _scalar(x.tp),
            host_s_per_seq=_scalar(x.host_s_per_seq),
            overhead_s=roofline.overhead_s,
            decode_overhead_s=roofline.decode_overhead_s,
            decode_attn_s=roofline.decode_attn_s,
            kv_decode_s=roofline.kv_decode_layer_s,
            keys_per_ctx=roofline.full_layers,
            window_layers=roofline.window_layers,
            window_tokens=roofline.window_tokens,
            comm_fixed_s=roofline.comm_fixed_s,
            comm_s_per_token=roofline.comm_s_per_token,
        )

    def _ratio(self, seqs: float, q: float, ctx: float) -> float:
        """ρ_q = max(c·q, m) / max(c, m) of the roofline's decode attention (``kernel_step.attention_ratio``)."""
        if q == 1.0:
            return 1.0
        keys = self.keys_per_ctx * ctx + self.window_layers * min(ctx, self.window_tokens)
        c = self.decode_attn_s * seqs * keys
        m = self.kv_decode_s * seqs * keys
        one = max(c, m)
        return max(c * q, m) / one if one > 0 else 1.0

    def _kv_bound(self, seqs: float, q: float, ctx: np.ndarray) -> bool:
        """ρ_q is exactly 1 at every context: the KV reads m = kv·seqs·keys outweigh the q-fold FLOPs c·q =
        attn·seqs·keys·q by more than the rounding of their products can close (a margin of 1e-9 ≫ 4 ulp), so
        max(c·q, m) = max(c, m) = m and ρ_q = m / m = 1 (or 1 where keys = 0) — ``_decode_from`` may skip the
        ratio's array operations: attention · 1.0 is attention.  Needs q ≥ 1, attn ≥ 0 and contexts ≥ 0
        (keys ≥ 0); a memory-bound decode (the presets' speculation) is."""
        attn, kv = self.decode_attn_s * seqs, self.kv_decode_s * seqs
        return q >= 1.0 and attn >= 0.0 and kv >= attn * q * (1.0 + 1e-9) and bool(ctx.size == 0 or ctx.min() >= 0.0)

    def _decode_attention_s(self, seqs: float, ctx: float) -> float:
        """``_at2`` of the decode curve at (seqs, ctx), the last one kept: a speculative mixed step asks for it twice
        (the target's step, then its draft share at q = 1).  One (seqs, ctx, value) tuple, swapped whole."""
        last = self._last_decode[0]
        if last is not None and last[0] == seqs and last[1] == ctx:
            return last[2]
        value = _at2(self.decode, seqs, ctx, 1.0)
        self._last_decode[0] = (seqs, ctx, value)
        return value

    def _comm(self, tokens: float, eager: bool) -> float:
        if self.n_allreduce == 0.0:
            return 0.0
        v = _at(self.allreduce_eager if eager else self.allreduce_graph, tokens, kc.TOKEN_PER_OCTAVE)
        if math.isnan(v):
            return self.comm_fixed_s + self.comm_s_per_token * tokens
        return self.n_allreduce * v

    def scalar_time_s(
        self, seqs: float, q: float, ctx: float, new: Sequence[float] = (), past: Sequence[float] = ()
    ) -> float:
        tokens = seqs * q + sum(new)
        if tokens <= 0:
            return 0.0
        if not self.plain:
            return self._layout_step_s(seqs, q, ctx, new, past)
        chunks = [(n, p) for n, p in zip(new, past, strict=True) if n > 0]
        logits = seqs * q + len(chunks)
        key = (tokens, logits, bool(chunks))
        terms = self._token_terms.get(key)
        if terms is None:  # the terms of the step's token counts alone: kept (the same floats each time)
            per = kc.TOKEN_PER_OCTAVE
            t = _at(self.tokens, tokens, per) + tokens * self.elementwise_s_per_token
            if self.experts is not None:
                t += _at(self.experts, tokens, per)
            if logits > 0:
                t += _at(self.head, logits, per)
            terms = (t, self._comm(tokens, bool(chunks)))
            if len(self._token_terms) < 1 << 16:
                self._token_terms[key] = terms
        t, comm = terms
        if seqs > 0:
            t += self._decode_attention_s(seqs, ctx) * self._ratio(seqs, q, ctx)
        for n, p in chunks:
            t += _at2(self.prefill, 1.0, _equivalent_prompt_tokens(n, p), 2.0)
        step = (self.overhead_s if chunks else self.decode_overhead_s) + t + comm
        return max(step, self.host_s_per_seq * (seqs + len(chunks)))  # efficiency.host_bound_s

    def chunk_run_s(self, seqs: int, q: float, ctx: np.ndarray, new: int, past: np.ndarray) -> np.ndarray:
        """``scalar_time_s(seqs, q, ctx[j], (new,), (past[j],))`` for every j: the simulator's runs of mixed steps
        (``sim.prefill_run``; ``Roofline.chunk_run_s``), one lookup per step — the same values to the bit."""
        pairs = zip(np.asarray(ctx, dtype=float).tolist(), np.asarray(past, dtype=float).tolist(), strict=True)
        return np.array([self.scalar_time_s(seqs, q, c, (new,), (p,)) for c, p in pairs], dtype=float)

    def _layout_step_s(self, seqs: float, q: float, ctx: float, new: Sequence[float], past: Sequence[float]) -> float:
        """One step of a layout: ``roofline.step_cost`` with the chunks merged (their mean past)."""
        n = float(sum(new))
        chunks = sum(1 for v in new if v > 0)
        mean_past = float(sum(p for v, p in zip(new, past, strict=True) if v > 0) / chunks) if chunks else 0.0
        cost = step_cost(self.inputs, seqs=seqs, q=q, ctx=ctx, n=n, past=mean_past, prompts=float(chunks))
        return _scalar(cost.time_s)

    def decode_time_s(self, seqs, q: float, ctx):
        """Decode-only steps of ``seqs`` sequences at the contexts ``ctx`` (an array: the simulator's runs of decode
        steps): the token terms in floats once, the attention over the contexts (``curves.at_grid``)."""
        ctx = np.asarray(ctx, dtype=float)
        if not self.plain or (type(seqs) is not int and np.ndim(seqs) > 0):  # (np.ndim: µs a call)
            s = np.asarray(seqs, dtype=float)
            cost = step_cost(self.inputs, seqs=s, q=q, ctx=ctx)
            return np.where(s * q > 0, cost.time_s, 0.0)
        seqs = float(seqs)
        if seqs * q <= 0:
            return np.zeros(ctx.shape)
        attention = kc.at_grid_batch(self.decode_array, seqs, ctx, 1.0)  # at_grid at a full batch array, to the bit
        return self._decode_from(seqs, q, ctx, attention)

    def decode_pair_s(self, seqs: int, q: float, ctx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(``decode_time_s(seqs, q, ctx)``, ``decode_time_s(seqs, 1.0, ctx)``): a speculative run of decode steps
        and its draft steps timed as a share of the target's (``RooflineStepTime``), the attention looked up once
        for both — the same values to the bit."""
        ctx = np.asarray(ctx, dtype=float)
        if not self.plain or float(seqs) * q <= 0 or float(seqs) <= 0:
            return self.decode_time_s(seqs, q, ctx), self.decode_time_s(seqs, 1.0, ctx)
        attention = kc.at_grid_batch(self.decode_array, float(seqs), ctx, 1.0)
        return self._decode_from(float(seqs), q, ctx, attention), self._decode_from(float(seqs), 1.0, ctx, attention)

    def _decode_from(self, seqs: float, q: float, ctx: np.ndarray, attention: np.ndarray) -> np.ndarray:
        """``decode_time_s`` of one batch size from its attention lookup (``attention`` is not changed)."""
        tokens = seqs * q
        fixed = self._decode_fixed.get(tokens)
        if fixed is None:  # the token terms: one value per batch, kept (the same floats each time)
            per = kc.TOKEN_PER_OCTAVE
            fixed = _at(self.tokens, tokens, per) + tokens * self.elementwise_s_per_token + _at(self.head, tokens, per)
            if self.experts is not None:
                fixed += _at(self.experts, tokens, per)
            fixed += self.decode_overhead_s + self._comm(tokens, False)
            if len(self._decode_fixed) < 1 << 16:
                self._decode_fixed[tokens] = fixed
        if q != 1.0 and not self._kv_bound(seqs, q, ctx):
            keys = self.keys_per_ctx * ctx + self.window_layers * np.minimum(ctx, self.window_tokens)
            c, m = self.decode_attn_s * seqs * keys, self.kv_decode_s * seqs * keys
            one = np.maximum(c, m)
            attention = attention * np.where(one > 0, np.maximum(c * q, m) / np.where(one > 0, one, 1.0), 1.0)
        return np.maximum(fixed + attention, self.host_s_per_seq * seqs)  # efficiency.host_bound_s
