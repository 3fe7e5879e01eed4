"""A small Llama-like decoder with grouped-query attention and a KV cache,
written once against ``backend`` (numpy or torch).

Per layer (d = hidden, h = heads, g = kv_heads, k = head_dim, f = ffn):
  x += attn(RMSNorm(x)) · W_o        W_qkv (d × (h+2g)k) fused as in vLLM; RoPE on q, k
  x += (SiLU(G) ⊙ U) · W_down        [G U] = RMSNorm(x) · W_gate_up (d × 2f), SwiGLU
Logits = RMSNorm(x) · Eᵀ with the embedding E tied to the LM head.

One ``step`` is one scheduler iteration, as the engine's ``roofline.step_cost``
sees it: ``seqs`` running sequences with ``q`` new tokens each after ``ctx``
cached tokens (decode: q = 1; speculative verification: q = γ + 1), plus
``n`` tokens of one prompt after ``past`` cached tokens (prefill or a chunk).
All T = seqs·q + n tokens go through the weight matmuls together; attention is
per sequence.  Logits are computed where a server needs them: every running
sequence's token(s) and the prompt's last token.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from planner.model.params import param_counts
from planner.model.specs import ModelSpec

ROPE_THETA = 10_000.0


@dataclass(frozen=True)
class DecoderShape:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int

    def model_spec(self, context_window_tokens: int) -> ModelSpec:
        """The engine's description of this decoder (tied embedding, gated MLP, no biases)."""
        return ModelSpec(
            name="kvplan bench decoder",
            layers=self.layers,
            hidden=self.hidden,
            heads=self.heads,
            kv_heads=self.kv_heads,
            head_dim=self.head_dim,
            ffn=self.ffn,
            vocab=self.vocab,
            tied_embeddings=True,
            gated_mlp=True,
            context_window_tokens=context_window_tokens,
            source="planner/bench/decoder.py",
        )

    @property
    def params(self) -> float:
        return param_counts(self.model_spec(1)).total


@dataclass
class _Layer:
    attn_norm: Any
    w_qkv: Any
    w_o: Any
    mlp_norm: Any
    w_gate_up: Any
    w_down: Any


@dataclass
class KVCache:
    """Per layer K and V, (seqs, g, tokens, k); every page written at allocation."""

    k: list[Any]
    v: list[Any]


def rope_tables(positions: int, head_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """cos, sin (positions × k/2): angle p · θ^(−2i/k) (Su et al. 2021, RoFormer)."""
    inv = ROPE_THETA ** (-np.arange(0, head_dim, 2, dtype=np.float64) / head_dim)
    ang = np.arange(positions, dtype=np.float64)[:, None] * inv[None, :]
    return np.cos(ang), np.sin(ang)


class Decoder:
    def __init__(self, shape: DecoderShape, backend, max_positions: int):
        s, be = shape, backend
        self.shape, self.be = s, be
        d, qkv = s.hidden, (s.heads + 2 * s.kv_heads) * s.head_dim
        init = d**-0.5  # keeps activations O(1) through random weights
        self.emb = be.randn((s.vocab, d), 1.0)
        self.lm_head = be.weight(self.emb.T)  # tied: the same matrix (a view, or one packed copy)
        self.final_norm = be.filled((d,), 1.0)
        self.layers = [
            _Layer(
                attn_norm=be.filled((d,), 1.0),
                w_qkv=be.weight(be.randn((d, qkv), init)),
                w_o=be.weight(be.randn((s.heads * s.head_dim, d), init)),
                mlp_norm=be.filled((d,), 1.0),
                w_gate_up=be.weight(be.randn((d, 2 * s.ffn), init)),
                w_down=be.weight(be.randn((s.ffn, d), s.ffn**-0.5)),
            )
            for _ in range(s.layers)
        ]
        cos, sin = rope_tables(max_positions, s.head_dim)
        self.cos, self.sin = be.from_numpy(cos), be.from_numpy(sin)

    def weights(self) -> list[Any]:
        """Every matrix a step streams, in the backend's layout (for ``backend.tune_linear``)."""
        return [m for w in self.layers for m in (w.w_qkv, w.w_o, w.w_gate_up, w.w_down)] + [self.lm_head]

    def cache(self, seqs: int, tokens: int) -> KVCache:
        s = self.shape
        dims = (seqs, s.kv_heads, tokens, s.head_dim)
        return KVCache(
            k=[self.be.filled(dims, 0.01) for _ in range(s.layers)],
            v=[self.be.filled(dims, 0.01) for _ in range(s.layers)],
        )

    def _rope(self, x, start: int):
        """x (S, L, heads, k) at positions start … start+L−1, rotate-half form."""
        half = x.shape[-1] // 2
        length = x.shape[1]
        c = self.cos[start : start + length][None, :, None, :]
        sn = self.sin[start : start + length][None, :, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        return self.be.cat_last(x1 * c - x2 * sn, x2 * c + x1 * sn)

    def _attention(self, q, k, v, seqs: int, length: int, start: int, cache: KVCache, layer: int):
        """q (S·L, h·k), k/v (S·L, g·k) → (S·L, h·k); writes k/v at start … start+L−1."""
        s = self.shape
        qh = self._rope(q.reshape(seqs, length, s.heads, s.head_dim), start).swapaxes(1, 2)  # (S, h, L, k)
        kh = self._rope(k.reshape(seqs, length, s.kv_heads, s.head_dim), start).swapaxes(1, 2)  # (S, g, L, k)
        vh = v.reshape(seqs, length, s.kv_heads, s.head_dim).swapaxes(1, 2)
        end = start + length
        cache.k[layer][:seqs, :, start:end] = kh
        cache.v[layer][:seqs, :, start:end] = vh
        o = self.be.attend(qh, cache.k[layer][:seqs, :, :end], cache.v[layer][:seqs, :, :end], start)
        return o.swapaxes(1, 2).reshape(seqs * length, s.heads * s.head_dim)

    def step(
        self, ids, seqs: int, q: int, ctx: int, n: int, past: int, running: KVCache | None, prompt: KVCache | None
    ):
        """One scheduler step (see module doc); ``ids`` holds seqs·q + n token ids. → logits."""
        s, be = self.shape, self.be
        hk, gk = s.heads * s.head_dim, s.kv_heads * s.head_dim
        dec = seqs * q
        x = self.emb[ids]  # (T, d)
        for i, w in enumerate(self.layers):
            qkv = be.mm(be.rmsnorm(x, w.attn_norm), w.w_qkv)  # (T, (h+2g)k)
            qs, ks, vs = qkv[:, :hk], qkv[:, hk : hk + gk], qkv[:, hk + gk :]
            parts = []
            if seqs:
                assert running is not None, "decoding sequences need their KV cache"
                parts.append(self._attention(qs[:dec], ks[:dec], vs[:dec], seqs, q, ctx, running, i))
            if n:
                assert prompt is not None, "a prompt chunk needs its KV cache"
                parts.append(self._attention(qs[dec:], ks[dec:], vs[dec:], 1, n, past, prompt, i))
            attn = parts[0] if len(parts) == 1 else be.cat_rows(parts)
            x = x + be.mm(attn, w.w_o)
            gu = be.mm(be.rmsnorm(x, w.mlp_norm), w.w_gate_up)  # (T, 2f)
            x = x + be.mm(be.silu_mul(gu[:, : s.ffn], gu[:, s.ffn :]), w.w_down)
        rows = ([x[:dec]] if seqs else []) + ([x[-1:]] if n else [])
        last = rows[0] if len(rows) == 1 else be.cat_rows(rows)
        return be.mm(be.rmsnorm(last, self.final_norm), self.lm_head)
