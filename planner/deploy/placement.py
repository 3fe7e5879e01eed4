"""Where each replica runs on bare hosts (the compose and shell writers): hosts of the GPU profile's
``gpus_per_node`` GPUs, the GPUs by device id, and the ports.  Pure.

Replicas are placed pool by pool (prefill first), replica by replica: a replica that spans nodes takes whole
fresh hosts; one that fits a host goes on the current host if its free GPUs hold it, else on the next one,
on consecutive device ids.  Ports (every server shares its host's network): with a router, the router listens
on the engine's port P on host 0 and the servers of a host on P + 1, P + 2, …; a single replica without a
router listens on P itself.  SGLang prefill servers take bootstrap ports 8998, 8999, … per host; vLLM's NIXL
side channels take 5600 + the data-parallel ranks before them on the host (each rank uses base + rank).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.deploy.argv import NIXL_SIDE_CHANNEL_PORT, SGLANG_BOOTSTRAP_PORT, Endpoint
from planner.deploy.fleet import Fleet, Pool


@dataclass(frozen=True)
class Placed:
    """One node of one replica on a host."""

    pool: Pool
    replica: int
    node: int  # node rank inside the replica
    host: int
    devices: tuple[int, ...]
    port: int
    side_port: int  # vLLM NIXL side channel (disaggregated only)
    bootstrap_port: int | None  # SGLang prefill

    @property
    def label(self) -> str:
        """``decode-1`` or, for a multi-node replica, ``decode-1-node0``."""
        base = f"{self.pool.role}-{self.replica}"
        return base if self.pool.nodes == 1 else f"{base}-node{self.node}"


def needs_router(fleet: Fleet) -> bool:
    """A router on bare hosts: the plan's (``Fleet.policy``), or round robin over more than one replica."""
    return fleet.policy is not None or sum(p.replicas for p in fleet.pools) > 1


def place(fleet: Fleet) -> list[Placed]:
    """Every node of every replica (module doc)."""
    per_host = fleet.pools[0].resolved.gpu.gpus_per_node
    router = needs_router(fleet)
    out: list[Placed] = []
    host, used, slots, side, boot = 0, 0, 0, 0, 0

    def next_host() -> None:
        nonlocal host, used, slots, side, boot
        host, used, slots, side, boot = host + 1, 0, 0, 0, 0

    for pool in fleet.pools:
        for replica in range(pool.replicas):
            if used and (pool.nodes > 1 or used + pool.gpus_per_node > per_host):
                next_host()
            for node in range(pool.nodes):
                if node:
                    next_host()
                port = fleet.port + 1 + slots if router else fleet.port
                sglang_prefill = fleet.engine == "sglang" and pool.role == "prefill" and node == 0
                bootstrap = SGLANG_BOOTSTRAP_PORT + boot if sglang_prefill else None
                devices = tuple(range(used, used + pool.gpus_per_node))
                out.append(Placed(pool, replica, node, host, devices, port, NIXL_SIDE_CHANNEL_PORT + side, bootstrap))
                used += pool.gpus_per_node
                slots += 1
                side += pool.scenario.dp
                boot += bootstrap is not None
            if pool.nodes > 1:
                next_host()
    return out


def hosts(placed: list[Placed]) -> int:
    return max(p.host for p in placed) + 1


def endpoints(fleet: Fleet, placed: list[Placed], address: dict[int, str]) -> list[list[Endpoint]]:
    """The serving node (node 0) of every replica, per pool in ``fleet.pools`` order, at ``address[host]``."""
    return [
        [Endpoint(address[p.host], p.port, p.bootstrap_port) for p in placed if p.pool is pool and p.node == 0]
        for pool in fleet.pools
    ]


def leader_host(placed: list[Placed], p: Placed) -> int:
    """The host of node 0 of ``p``'s replica."""
    return next(q.host for q in placed if q.pool is p.pool and q.replica == p.replica and q.node == 0)
