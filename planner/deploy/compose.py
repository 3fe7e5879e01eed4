"""A Compose file (compose-spec) for a fleet that fits one node, as a dict (the bundle writes it as YAML).  Pure.

One service per replica (``planner.deploy.placement``: GPUs by device id, a port each), sharing the host's
network and IPC namespace (``network_mode: host``, ``ipc: host``: the servers, the router and NCCL/NIXL reach
each other on 127.0.0.1, and /dev/shm is the host's, as vLLM's docker docs advise with --ipc=host):

  NVIDIA  deploy.resources.reservations.devices: driver nvidia, device_ids, capabilities [gpu]
          (the Compose spec's GPU reservation; docs.docker.com/compose/how-tos/gpu-support)
  AMD     devices /dev/kfd and /dev/dri, group video, HIP_VISIBLE_DEVICES = the replica's ids,
          cap SYS_PTRACE and seccomp=unconfined (the docker run flags of vLLM's and SGLang's ROCm docs)

Each server has a healthcheck on /health (python3 in the image; start period 30 minutes for the weights); the
router (``placement.needs_router``) waits for them, and the ``bench`` profile's service waits for the router:
``docker compose --profile bench run --rm bench`` writes the result to ./results.
"""

from __future__ import annotations

import shlex
from typing import Any

from planner.deploy.argv import ENTRY_WORDS, bench_argv, router_argv, serve_argv, serve_env
from planner.deploy.fleet import Fleet
from planner.deploy.images import DeployError
from planner.deploy.kubernetes import bench_result_file
from planner.deploy.placement import Placed, endpoints, hosts, needs_router, place

HF_CACHE = "${HOME}/.cache/huggingface:/root/.cache/huggingface"
#: Seconds a server may take to download and load its weights before its healthcheck counts.
START_PERIOD = "1800s"


def _healthcheck(port: int) -> dict[str, Any]:
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{port}/health', timeout=5)"
    return {
        "test": ["CMD", "python3", "-c", probe],
        "interval": "10s",
        "timeout": "10s",
        "retries": 3,
        "start_period": START_PERIOD,
    }


def _gpus(fleet: Fleet, p: Placed) -> dict[str, Any]:
    ids = [str(d) for d in p.devices]
    if fleet.vendor == "NVIDIA":
        device = {"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}
        return {"deploy": {"resources": {"reservations": {"devices": [device]}}}}
    return {
        "devices": ["/dev/kfd", "/dev/dri"],
        "group_add": ["video"],
        "cap_add": ["SYS_PTRACE"],
        "security_opt": ["seccomp=unconfined"],
    }


def _server(fleet: Fleet, p: Placed) -> dict[str, Any]:
    argv = serve_argv(fleet, p.pool, p.port, bootstrap_port=p.bootstrap_port)
    head = ENTRY_WORDS[fleet.engine]
    env = {"HF_TOKEN": "${HF_TOKEN:-}"} | serve_env(fleet, p.pool, "127.0.0.1", p.side_port)
    if fleet.vendor == "AMD":
        env["HIP_VISIBLE_DEVICES"] = ",".join(str(d) for d in p.devices)
    return {
        "image": fleet.image.ref,
        "entrypoint": argv[:head],
        "command": argv[head:],
        "network_mode": "host",
        "ipc": "host",
        "environment": env,
        "volumes": [HF_CACHE],
        **_gpus(fleet, p),
        "healthcheck": _healthcheck(p.port),
        "labels": {"kvplan.io/scenario": fleet.link},
    }


def one_node_problems(fleet: Fleet) -> list[str]:
    """Why the fleet does not fit the one node a compose file describes; [] when it does."""
    n = hosts(place(fleet))
    if n == 1:
        return []
    per_host = fleet.pools[0].resolved.gpu.gpus_per_node
    return [
        f"--target compose writes one node: this fleet needs {fleet.gpus} GPUs on {n} nodes of {per_host}; "
        "use --target kubernetes or --target shell"
    ]


def compose_file(fleet: Fleet) -> dict[str, Any]:
    """The compose file of a one-node fleet (module doc); DeployError when the fleet needs more nodes."""
    problems = one_node_problems(fleet)
    if problems:
        raise DeployError(problems)
    placed = place(fleet)
    services: dict[str, Any] = {f"{fleet.name}-{p.label}": _server(fleet, p) for p in placed}
    healthy = {name: {"condition": "service_healthy"} for name in services}
    entry = next(iter(services))
    if needs_router(fleet):
        argv = router_argv(fleet, fleet.port, endpoints(fleet, placed, {0: "127.0.0.1"}))
        head = 1 if fleet.engine == "vllm" else 3
        entry = f"{fleet.name}-router"
        services[entry] = {
            "image": fleet.router_image.ref,
            "entrypoint": argv[:head],
            "command": argv[head:],
            "network_mode": "host",
            "depends_on": healthy,
            "healthcheck": _healthcheck(fleet.port),
            "labels": {"kvplan.io/scenario": fleet.link},
        }
    path = f"/results/{bench_result_file(fleet)}"
    bench = bench_argv(fleet, f"http://127.0.0.1:{fleet.port}", path)
    services[f"{fleet.name}-bench"] = {
        "image": fleet.image.ref,
        "entrypoint": ["sh", "-c", shlex.join(bench)],
        "network_mode": "host",
        "environment": {"HF_TOKEN": "${HF_TOKEN:-}"},
        "volumes": ["./results:/results", HF_CACHE],
        "profiles": ["bench"],
        "depends_on": {entry: {"condition": "service_healthy"}},
        "labels": {"kvplan.io/scenario": fleet.link},
    }
    return {"name": fleet.name, "services": services}
