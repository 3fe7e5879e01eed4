"""The scheduler limits and targets of one replica (``SimConfig``), below everything that runs a
simulation: the state, the steps, the results and the work budget all read it, none of them is
imported by it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.engine.inputs import EngineInputs
from planner.engine.memory import memory_plan, window_in_flight_tokens
from planner.model.scenario import PrefixCacheMode, Scenario
from planner.sim.blocks import BlockPool, unit_weights, window_cap_blocks
from planner.sim.slo import Slo

#: Share of requests (TTFT) or tokens (ITL) over the target that certainly misses the p99.
P99_MISS_FRAC = 0.01


@dataclass(frozen=True)
class SimConfig:
    """Scheduler limits and targets of one replica (SI units, token counts)."""

    batch: int  # max running sequences (vLLM max_num_seqs)
    chunk_tokens: int  # token budget per step
    block_tokens: int
    kv_capacity_blocks: int  # blocks of every layer that fit the KV budget
    context_window_tokens: int
    gamma: int  # draft tokens per step; 0 = no speculative decoding
    alpha: float
    seed: int
    slo: Slo = Slo()  # the targets the verdict and the early stop hold (``planner.sim.slo``)
    full_attention_layers: int = 1
    window_layers: int = 0  # sliding-window layers (window_tokens each); 0 = none
    window_tokens: int = 0
    prefix_cache: PrefixCacheMode = "pool"
    window_reach_tokens: int = 0  # tokens a window layer holds beyond its window (0: chunk_tokens, one batch)
    chunked_local: bool = False  # the window layers are chunked local attention (no −1 / +1 block)

    @classmethod
    def from_inputs(cls, x: EngineInputs, s: Scenario) -> SimConfig:
        """Limits from the scenario; capacity ⌊kv_capacity_tokens / block⌋ from ``memory_plan`` (the block in
        force); window layers keep their own blocks only where the engine gives them (vLLM's hybrid manager;
        SGLang's pool is one pool of full-layer tokens)."""
        plan = memory_plan(x)
        block = int(np.asarray(x.block_tokens).reshape(()))
        blocks = int(np.asarray(plan["kv_capacity_tokens"]).reshape(()) // block)
        own_windows = float(np.asarray(x.hybrid_kv).reshape(())) > 0 and float(np.asarray(x.mem_rule).reshape(())) != 1
        window_layers = int(np.asarray(x.window_layers).reshape(())) if own_windows else 0
        return cls(
            batch=s.batch,
            chunk_tokens=s.chunk,
            block_tokens=block,
            kv_capacity_blocks=blocks,
            context_window_tokens=int(np.asarray(x.context_window_tokens).reshape(())),
            gamma=s.gamma if s.spec else 0,
            alpha=s.alpha,
            seed=s.seed,
            slo=Slo.of(s),
            full_attention_layers=int(np.asarray(x.full_attention_layers).reshape(())),
            window_layers=window_layers,
            window_tokens=int(np.asarray(x.window_tokens).reshape(())) if window_layers else 0,
            prefix_cache=s.prefix_cache,
            window_reach_tokens=int(np.asarray(window_in_flight_tokens(x)).reshape(())),
            chunked_local=bool(np.asarray(x.chunked_local).reshape(()) > 0),
        )

    @property
    def unit_weights(self) -> tuple[int, int, int]:
        """(a, b, layers per pool unit) of ``blocks``."""
        return unit_weights(self.full_attention_layers, self.window_layers)

    @property
    def window_cap_blocks(self) -> int:
        if not self.window_layers:
            return 0
        reach = self.window_reach_tokens or self.chunk_tokens
        return window_cap_blocks(
            self.window_tokens, reach, self.context_window_tokens, self.block_tokens, self.chunked_local
        )

    @property
    def capacity_units(self) -> int:
        """Pool units: blocks × (L_f + L_w) / g (``blocks``)."""
        if not self.window_layers:
            return self.kv_capacity_blocks
        _, _, g = self.unit_weights
        return self.kv_capacity_blocks * (self.full_attention_layers + self.window_layers) // g

    def new_pool(self, requests: int) -> BlockPool:
        a, b, _ = self.unit_weights
        return BlockPool(self.block_tokens, self.capacity_units, requests, a, b, self.window_cap_blocks)

    def lifetime_units(self, tokens: np.ndarray) -> np.ndarray:
        """Units of a request whose last step covers ``tokens`` (all private: the most it holds at once)."""
        positions = -(-tokens // self.block_tokens)
        a, b, _ = self.unit_weights
        return a * positions + b * np.minimum(positions, self.window_cap_blocks)
