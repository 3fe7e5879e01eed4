"""Speculative decoding's accepted tokens per verification step, drawn from a seeded generator.

Each decode step a sequence emits a = min(G, γ + 1) tokens, G ~ Geometric(1 − α):
P(a = j) = α^(j−1)(1 − α) for j ≤ γ and P(a = γ + 1) = α^γ, whose mean is
(1 − α^(γ+1)) / (1 − α) = ``speculative.expected_tokens_per_step`` (Leviathan et al.,
ICML 2023).  The simulator draws from ``default_rng([seed, 1])`` through one buffer, so
the sequence of draws depends only on the seed and the order they are taken in.
"""

from __future__ import annotations

import numpy as np


def draw_accepted_tokens(
    rng: np.random.Generator, alpha: float, step_tokens: int, shape: tuple[int, int]
) -> np.ndarray:
    """Tokens emitted per verification: min(Geometric(1 − α), γ + 1), with step_tokens = γ + 1."""
    if alpha >= 1.0:
        return np.full(shape, step_tokens, dtype=np.int64)
    if alpha <= 0.0:
        return np.ones(shape, dtype=np.int64)
    return np.minimum(rng.geometric(1.0 - alpha, size=shape), step_tokens)


class AcceptanceDraws:
    """``draw_accepted_tokens`` served from a pre-drawn buffer (one generator call per 2¹⁶ draws)."""

    SIZE = 1 << 16

    def __init__(self, rng: np.random.Generator, alpha: float, step_tokens: int):
        self.rng, self.alpha, self.step_tokens = rng, alpha, step_tokens
        self.buffer = np.zeros(0, dtype=np.int64)
        self.position = 0

    def take(self, rows: int, cols: int) -> np.ndarray:
        """The next rows × cols draws, row after row."""
        count = rows * cols
        if self.position + count > self.buffer.size:
            fresh = draw_accepted_tokens(self.rng, self.alpha, self.step_tokens, (max(self.SIZE, count), 1))
            self.buffer = np.concatenate([self.buffer[self.position :], fresh.ravel()])
            self.position = 0
        out = self.buffer[self.position : self.position + count].reshape(rows, cols)
        self.position += count
        return out
