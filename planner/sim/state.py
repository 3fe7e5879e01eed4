"""The state of a simulation: the per-request state every replica shares (``RunState``: a request
lives on one replica) and each replica's own (``Replica``); the limits are ``config.SimConfig``.

Per-request lists are indexed by request (arrival order); ``prefill_target_tokens`` is the
context a request's (re)computed prefill reaches.  Prefix blocks (``workload``) are kept per
request only while they may be shared: the leading blocks whose chain key occurs in more than
one request (a key seen once can never be found, and chain keys that repeat form a prefix).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from planner.engine.step_time import StepTime
from planner.sim.acceptance import AcceptanceDraws
from planner.sim.closed_loop import ClosedLoop
from planner.sim.config import P99_MISS_FRAC, SimConfig
from planner.sim.decode_set import DecodeSet
from planner.sim.prefix_cache import PrefixCache
from planner.sim.status import REJECTED_CONTEXT, REJECTED_KV, SERVED
from planner.sim.workload import Workload

#: A token position no prefill reaches (no prefix block left to cache).
NEVER = 1 << 62


class RunState:
    """What every replica shares: the requests (read-only), their progress and the global counters."""

    def __init__(self, w: Workload, cfg: SimConfig, step_time: StepTime, detail: bool):
        n = len(w)
        self.cfg, self.step_time, self.detail = cfg, step_time, detail
        self.requests = n
        self.step_tokens = cfg.gamma + 1
        self.speculative = cfg.gamma > 0
        self.log_steps = detail and not self.speculative  # per-request ITLs from runs of the step log
        # runs of mixed steps in one call (``prefill_run``): the decode set and a step time that has them
        self.prefill_runs = not self.speculative and hasattr(step_time, "chunk_run_s")
        self.draws = AcceptanceDraws(np.random.default_rng([cfg.seed, 1]), cfg.alpha, self.step_tokens)
        self.status = np.full(n, SERVED, dtype=np.int64)
        self.status[w.prompt_tokens + w.output_tokens > cfg.context_window_tokens] = REJECTED_CONTEXT
        # the units of the request's last step, at the latest: ⌈(prompt + output + q) / block⌉ positions
        lifetime = cfg.lifetime_units(w.prompt_tokens + w.output_tokens + self.step_tokens)
        self.status[(self.status == SERVED) & (lifetime > cfg.capacity_units)] = REJECTED_KV
        servable = self.status == SERVED
        # the early stop's targets (∞: not counted; planner.sim.slo); a rejected request never gets a
        # token: it counts as a TTFT miss out of all requests
        self.stop_ttft_s, self.stop_itl_s = cfg.slo.stop_ttft_s, cfg.slo.stop_itl_s
        self.ttft_miss_limit = P99_MISS_FRAC * n
        self.itl_miss_limit = P99_MISS_FRAC * float(np.maximum(w.output_tokens[servable] - 1, 0).sum())
        self.ttft_misses = int((~servable).sum()) if self.stop_ttft_s < float("inf") else 0
        self.itl_miss_tokens = 0.0

        self.arrival_s: list[float] = w.arrival_s.tolist()
        self.prompt_tokens: list[int] = w.prompt_tokens.tolist()
        self.output_tokens: list[int] = w.output_tokens.tolist()
        self.servable: list[bool] = servable.tolist()
        self.generated_tokens = [0] * n
        self.context_tokens = [0] * n
        self.prefill_target_tokens = [0] * n
        self.ttft_s = [float("nan")] * n
        self.finish_s = [float("nan")] * n
        self.last_token_s = [0.0] * n
        self.replica = [-1] * n
        # the prefix cache's view of each request, and what its first admission found
        self._prefix_blocks(w)
        prompt = float(w.prompt_tokens.sum())
        shares = w.has_prefixes and cfg.prefix_cache != "off"
        self.reuse_ceiling_frac = float(w.reusable_prefix_tokens().sum()) / prompt if shares and prompt else 0.0
        self.cached_tokens = [0] * n
        self.hit_blocks = [0] * n
        self.admitted = [False] * n
        # speculative decoding's inter-token latencies, tagged with their requests as booked (detail; grouped by
        # request afterwards: ``results.itl_by_request``; the sample is each replica's ``itl_pieces``)
        self.itl_booked: list[tuple[list[int], np.ndarray, np.ndarray]] = []
        self.decode_from = [-1] * n  # replica step at which the request's current run of decodes began
        self.decode_runs: list[list[tuple[int, int]]] = [[] for _ in range(n)] if detail else []
        self.gaps: list[list[float]] = [[] for _ in range(n)] if detail else []

        self.done = 0
        self.iterations = 0
        self.stopped = False
        # a closed loop of clients (vllm bench serve --max-concurrency): it releases the starts in arrival_s
        self.loop: ClosedLoop | None = None

    def _prefix_blocks(self, w: Workload) -> None:
        """Per request: the keys, end tokens and cumulative KV blocks of its shareable prefix blocks."""
        n, block = len(w), self.cfg.block_tokens
        self.keys: list[list[int]] = [[] for _ in range(n)]
        self.ends: list[list[int]] = [[] for _ in range(n)]
        self.cum_blocks: list[list[int]] = [[] for _ in range(n)]
        self.next_unit = [0] * n
        self.register_at = [NEVER] * n
        self.prefix_blocks_total = (-(-w.prompt_tokens // w.prefix_block_tokens)).tolist()
        self.max_shared_blocks = [0] * n  # KV blocks a look-up could find at most (ends ≤ prompt − 1)
        if self.cfg.prefix_cache == "off" or not w.has_prefixes:
            return
        _, inverse, counts = np.unique(w.prefix_keys, return_inverse=True, return_counts=True)
        owner = np.repeat(np.arange(n), np.diff(w.offsets))
        position = np.arange(owner.size) - w.offsets[owner]
        alone = counts[inverse] == 1
        lead = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(lead, owner[alone], position[alone])  # the first block no other request has
        lead = np.minimum(lead, np.diff(w.offsets))
        usable = (position < lead[owner]) & (w.prefix_ends <= w.prompt_tokens[owner] - 1)
        most = np.zeros(n, dtype=np.int64)
        np.maximum.at(most, owner[usable], w.prefix_ends[usable] // block)
        self.max_shared_blocks = most.tolist()
        keys, ends, cum = w.prefix_keys.tolist(), w.prefix_ends.tolist(), (w.prefix_ends // block).tolist()
        starts = w.offsets.tolist()
        for i in np.flatnonzero(lead > 0).tolist():
            a, b = starts[i], starts[i] + int(lead[i])
            self.keys[i], self.ends[i], self.cum_blocks[i] = keys[a:b], ends[a:b], cum[a:b]

    def start(self, i: int, found: int) -> None:
        """Request i (re)starts its prefill with its first ``found`` prefix blocks from the cache."""
        self.next_unit[i] = found
        ends = self.ends[i]
        self.register_at[i] = ends[found] if found < len(ends) else NEVER


class Replica:
    """One replica: its KV pool and prefix cache, queue, running batch, clock and records."""

    def __init__(self, index: int, cfg: SimConfig, requests: int):
        self.index = index
        self.pool = cfg.new_pool(requests)
        self.cache = PrefixCache(self.pool, cfg.prefix_cache, requests) if cfg.prefix_cache != "off" else None
        self.waiting: deque[int] = deque()
        self.running: list[int] = []  # admitted, in admission order
        self.prefilling: list[int] = []  # the running ones still prefilling, in admission order
        # without speculative decoding the decoding ones advance together (``DecodeSet``)
        self.decode_set = DecodeSet(requests, 1, self.pool) if cfg.gamma == 0 else None
        self.feed: list[int] = []  # requests routed here, in arrival order
        self.next_feed = 0
        self.now_s = 0.0
        self.steps = 0
        self.step_log: list[float] = []  # every step's duration, in order (per-request ITLs)
        self.itl_pieces: list[tuple[np.ndarray, np.ndarray | int]] = []  # (ITLs, token weights) in booking order
        self.itl_values: list[float] = []  # single ITLs not yet in a piece (one numpy array per run of them)
        self.itl_weights: list[float] = []
        self.timeline_s: list[float] = []
        self.timeline_queue: list[int] = []
        self.timeline_used_units: list[int] = []

    @property
    def idle(self) -> bool:
        return not self.running and not self.waiting and self.next_feed >= len(self.feed)

    def add_itl(self, value_s: float, weight: int) -> None:
        """One ITL value of ``weight`` tokens (a mixed step's decodes, or a recomputation's token)."""
        self.itl_values.append(value_s)
        self.itl_weights.append(weight)

    def add_itl_piece(self, values_s: np.ndarray, weights: np.ndarray | int) -> None:
        """A piece of ITLs, after the single ones booked before it (booking order is kept)."""
        self.flush_itl()
        self.itl_pieces.append((values_s, weights))

    def flush_itl(self) -> None:
        if self.itl_values:
            self.itl_pieces.append((np.array(self.itl_values), np.array(self.itl_weights)))
            self.itl_values, self.itl_weights = [], []
