"""The plan's whole fleet, as the deployment writers need it: its pools, their replicas, GPUs and nodes, the
launch command of each, the images and the router.  Pure; every refusal names the field and the rule.

Pools (``Scenario.prefill_pool``):
  colocated      one pool of ``replicas`` replicas of the scenario (every replica prefills and decodes)
  disaggregated  a prefill pool of ``prefill_replicas`` replicas of ``Scenario.prefill_pool()`` and a decode
                 pool of ``replicas`` replicas of the scenario itself (its layout, batch and chunk)
One replica spans ⌈tp · dp · pp / gpus_per_node⌉ nodes of the GPU profile; a multi-node replica puts the same
number of GPUs on each node (vLLM and SGLang both split the GPUs evenly over --nnodes), so tp · dp · pp must
divide evenly, else the plan is refused.

Router: where the plan routes by prefix (``router=prefix_affinity``), by load (``least_tokens``) or has a
prefill pool, the fleet gets the router the engine's ecosystem uses (``planner.deploy.images``), configured
with the policy closest to the plan's: prefix_affinity → cache_aware (the routers' approximate prefix tree),
least_tokens → power_of_two (the less loaded of two), round_robin → round_robin.  A colocated round-robin
fleet needs none on Kubernetes (its Service spreads connections over the replicas); compose and shell,
which have no Service, get a round-robin router when there is more than one replica.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from planner.deploy.images import DeployError, Image, engine_image, pinned_release, router_image, vendor_of
from planner.engine.evaluate import Resolved, inputs_for, resolve
from planner.errors import ScenarioError
from planner.launch.commands import ENGINES, LaunchCommand, launch_command
from planner.links import to_query_string
from planner.model.catalog import Catalog
from planner.model.engine_versions import engine_name
from planner.model.scenario import NO_PREFILL_POOL, Router, Scenario
from planner.sim.simulate import fit_problems

Role = Literal["colocated", "prefill", "decode"]
#: The routers' policy closest to the plan's router (module doc).
POLICY: dict[Router, str] = {
    "prefix_affinity": "cache_aware",
    "least_tokens": "power_of_two",
    "round_robin": "round_robin",
}
#: The engine's own default HTTP port (vLLM ``--port`` 8000; SGLang ``--port`` 30000).
ENGINE_PORT = {"vllm": 8000, "sglang": 30000}
#: Kubernetes names are DNS-1123 labels; a LeaderWorkerSet's pods add "-<group>-<index>" (and a
#: StatefulSet revision hash) to its name, so the names kvplan writes stay well inside 63 characters.
MAX_NAME_CHARS = 32


@dataclass(frozen=True)
class Pool:
    """One pool of identical replicas."""

    role: Role
    resolved: Resolved  # one replica, its defaults fitted (``resolved.scenario``)
    replicas: int
    command: LaunchCommand  # what ``kvplan launch`` prints for one replica
    nodes: int  # nodes (hosts) one replica spans

    @property
    def scenario(self) -> Scenario:
        return self.resolved.scenario

    @property
    def gpus_per_replica(self) -> int:
        s = self.scenario
        return s.tp * s.dp * s.pp

    @property
    def gpus_per_node(self) -> int:
        """GPUs one pod (one node of a replica) requests."""
        return self.gpus_per_replica // self.nodes

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_replica

    @property
    def layout(self) -> str:
        s = self.scenario
        parts = [f"tp{s.tp}"] + [f"{k}{v}" for k, v in (("dp", s.dp), ("pp", s.pp), ("ep", s.ep)) if v > 1]
        return "·".join(parts)


@dataclass(frozen=True)
class Fleet:
    """Everything the writers read (module doc)."""

    link: str  # the scenario's query string: every file names it
    engine: str  # vllm | sglang
    release: str  # the engine release the images are pinned to
    vendor: str  # NVIDIA | AMD
    image: Image
    router_image: Image
    policy: str | None  # the router's policy, None = no router on Kubernetes
    pools: tuple[Pool, ...]
    name: str  # the prefix of every object, container and script name
    notes: tuple[str, ...]

    @property
    def port(self) -> int:
        return ENGINE_PORT[self.engine]

    @property
    def disaggregated(self) -> bool:
        return len(self.pools) > 1

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def gpu_resource(self) -> str:
        """The device plugin's resource name (NVIDIA and AMD GPU operators)."""
        return "nvidia.com/gpu" if self.vendor == "NVIDIA" else "amd.com/gpu"

    @property
    def serving(self) -> Scenario:
        """The scenario whose traffic the fleet serves (the decode pool's, or the only one)."""
        return self.pools[-1].scenario

    def pool_name(self, pool: Pool) -> str:
        return f"{self.name}-{pool.role}"


_NOT_DNS = re.compile(r"[^a-z0-9]+")


def dns_name(text: str) -> str:
    """``text`` as a DNS-1123 label: lower case letters, digits and '-', starting and ending alphanumeric."""
    name = _NOT_DNS.sub("-", text.lower()).strip("-")[:MAX_NAME_CHARS].strip("-")
    return name or "kvplan"


def _pool(role: Role, s: Scenario, replicas: int, catalog: Catalog, engine: str) -> Pool:
    where = "" if role == "colocated" else f"{role} pool: "
    try:
        r = resolve(s, catalog)
    except ScenarioError as exc:
        raise DeployError([where + p for p in exc.problems]) from None
    problems = fit_problems(r.scenario, r, inputs_for(r))
    if problems:
        why = [p.removesuffix("; nothing to simulate") + "; the engine would not start" for p in problems]
        raise DeployError([where + p for p in why])
    gpus, per_node = r.scenario.tp * r.scenario.dp * r.scenario.pp, r.gpu.gpus_per_node
    nodes = -(-gpus // per_node)
    if gpus % nodes:
        raise DeployError(
            [
                f"{where}tp · dp · pp = {gpus} GPUs span {nodes} nodes of {per_node} {r.gpu.name} but do not split "
                f"evenly over them (vLLM and SGLang put the same GPUs on every node); choose a layout of "
                f"{nodes} × {gpus // nodes + 1} or fewer GPUs"
            ]
        )
    return Pool(role, r, replicas, launch_command(r, engine, catalog), nodes)


def build_fleet(s: Scenario, catalog: Catalog, engine: str | None = None) -> Fleet:
    """The fleet of scenario ``s`` served by ``engine`` (default: as ``kvplan launch``); DeployError (a
    ProblemsError) names every reason it cannot be deployed."""
    planned = engine_name(s.engine)
    name = engine or (planned if planned in ENGINES else "vllm")
    if name not in ENGINES:
        raise DeployError([f"--engine {name!r}: kvplan writes deployments for {', '.join(ENGINES)}"])
    # the release the plan used (engine=NAME@VERSION), or the newest kvplan has of the engine the files run
    profile = catalog.engine(s.engine if planned == name else name)
    if profile is None:
        raise DeployError([f"engine {name!r}: no engine profile in the catalog (engine_profiles/{name}/)"])
    gpu = catalog.profile(s.gpu)
    if gpu is None:
        raise DeployError([f"gpu={s.gpu!r}: unknown GPU profile; choose one of {', '.join(catalog.profile_keys())}"])
    vendor_of(gpu)
    release = pinned_release(name, profile)
    image = engine_image(name, release, gpu)
    if s.disaggregated:
        decode = s.with_changes(**NO_PREFILL_POOL)
        pools: tuple[Pool, ...] = (_pool("prefill", s.prefill_pool(), s.prefill_replicas, catalog, name),)
        pools += (_pool("decode", decode, s.replicas, catalog, name),)
    else:
        pools = (_pool("colocated", s, s.replicas, catalog, name),)
    policy = POLICY[s.router] if s.disaggregated or s.router != "round_robin" else None
    notes = _notes(s, pools, name)
    return Fleet(
        link=to_query_string(s),
        engine=name,
        release=release,
        vendor=gpu.vendor,
        image=image,
        router_image=router_image(name, image.ref),
        policy=policy,
        pools=pools,
        name=dns_name(f"kvplan-{s.model if s.model != 'custom' else s.custom_name or 'custom'}"),
        notes=notes,
    )


def _notes(s: Scenario, pools: tuple[Pool, ...], engine: str) -> tuple[str, ...]:
    """What the files cannot say: the launch notes of every pool, once each, and the deployment's own."""
    seen: dict[str, None] = {}
    for p in pools:
        for n in (*p.resolved.notes, *p.command.notes):
            if "--node-rank" in n:
                continue  # the deployment writes every node's own command
            seen.setdefault(n if len(pools) == 1 else f"{p.role} pool: {n}", None)
    if len(pools) > 1:
        seen.setdefault(
            "disaggregation: vLLM moves the KV cache with NixlConnector (NIXL over UCX; vLLM's docs: "
            "`uv pip install nixl` where the image lacks it; the ROCm image ships RIXL); set UCX_TLS / "
            "UCX_NET_DEVICES for your network"
            if engine == "vllm"
            else "disaggregation: SGLang moves the KV cache with its default Mooncake transfer engine, which needs "
            "RDMA NICs (add --disaggregation-ib-device); --disaggregation-transfer-backend nixl is the alternative",
            None,
        )
    return tuple(seen)
