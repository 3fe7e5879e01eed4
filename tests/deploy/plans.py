"""The plans the deployment tests write files for (the issue's "done when"), and what a file must say about them."""

from __future__ import annotations

from planner.links import from_query
from planner.model.scenario import Scenario

#: name → link: a colocated H100 plan behind a prefix-affinity router, a disaggregated plan (one tp4 prefill
#: replica, two tp2 decode replicas), a two-node pp2 plan (Llama-3.1-405B fp8, tp8·pp2 on 2 × 8 H100) and an
#: MI300X plan.
PLANS = {
    "colocated-h100": "gpu=h100-sxm&model=llama-3.1-8b&batch=64&chunk=4096&replicas=3&router=prefix_affinity"
    "&rate=12&prompt=1500&output=300&sim_requests=3000&seed=7&mem_util=0.88",
    "disaggregated": "gpu=h200&model=llama-3.1-70b&tp=2&batch=128&chunk=4096&replicas=2&prefill_replicas=1"
    "&prefill_tp=4&prefill_chunk=8192&rate=6&prompt=3000&output=400&slo_ttft_s=1.5&slo_itl_s=0.04",
    "two-node-pp2": "gpu=h100-sxm&model=llama-3.1-405b&wdtype=fp8&tp=8&pp=2&replicas=2&rate=1&batch=48",
    "mi300x": "gpu=mi300x&model=llama-3.1-70b&tp=2&replicas=3&rate=5&batch=96",
}
ENGINES = ("vllm", "sglang")


def plan(name: str) -> Scenario:
    s, issues = from_query(PLANS[name])
    assert not issues, issues
    return s
