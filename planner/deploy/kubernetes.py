"""Kubernetes manifests for the plan's fleet, as plain dicts (the bundle writes them as YAML).  Pure.

Per pool (``planner.deploy.fleet``): a Deployment of ``replicas`` pods when one replica fits one node, else a
LeaderWorkerSet (leaderworkerset.x-k8s.io/v1, kubernetes-sigs/lws: ``replicas`` groups of ``size`` = nodes pods;
every container gets LWS_LEADER_ADDRESS and LWS_WORKER_INDEX, which the args read as $(VAR)), and a Service
over the pods that serve HTTP (the leaders).  Each serving container:

  command + args   the ``kvplan launch`` command (``planner.deploy.argv.serve_argv``), split after ``vllm serve``
                   or ``python -m sglang.launch_server``
  resources        nvidia.com/gpu or amd.com/gpu = the GPUs of one node of a replica, as limit and request
  readiness        httpGet /health on the engine port (vLLM and SGLang both serve it), with a startup probe
                   that allows 30 minutes for the weights to download and load
  shared memory    an emptyDir of medium Memory at /dev/shm (NCCL/RCCL and PyTorch's inter-process tensors)
  HF_TOKEN         from the optional Secret hf-token (key token), for gated checkpoints

The router (where ``Fleet.policy`` is set) runs with a ServiceAccount allowed to list and watch the pods of its
namespace, finds the serving pods by label (``--service-discovery``), and its Service, named after the fleet,
is the entry point; without one the pool's Service carries the fleet's name.  The benchmark is a Job that runs
against that Service and prints the result JSON as its last log line.
"""

from __future__ import annotations

import shlex
from typing import Any

from planner.deploy.argv import ENTRY_WORDS, SGLANG_BOOTSTRAP_PORT, bench_argv, router_discovery_argv, serve_argv
from planner.deploy.fleet import Fleet, Pool

Manifest = dict[str, Any]
LABEL_NAME = "app.kubernetes.io/name"
LABEL_POOL = "kvplan.io/pool"
LABEL_SERVING = "kvplan.io/serving"
ANNOTATION_LINK = "kvplan.io/scenario"
#: The bootstrap-port annotation SGLang's router reads from a prefill pod (sglang_router router_args.py).
SGLANG_BOOTSTRAP_ANNOTATION = "sglang.ai/bootstrap-port"
HF_SECRET = "hf-token"
#: Startup probe: every 10 s, up to 180 times (30 minutes to download and load the weights).
STARTUP_PERIOD_S = 10
STARTUP_FAILURES = 180
BENCH_RESULT_DIR = "/tmp/kvplan"


def _meta(fleet: Fleet, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "labels": {LABEL_NAME: fleet.name, **(labels or {})},
        "annotations": {ANNOTATION_LINK: fleet.link},
    }


def _selector(fleet: Fleet, pool: Pool) -> dict[str, str]:
    return {LABEL_NAME: fleet.name, LABEL_POOL: pool.role}


def _env(fleet: Fleet, pool: Pool) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_SECRET, "key": "token", "optional": True}}}
    ]
    if pool.role != "colocated" and fleet.engine == "vllm":
        env.append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    return env


def _probe(failures: int, period_s: int) -> dict[str, Any]:
    return {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": period_s, "failureThreshold": failures}


def _pod(fleet: Fleet, pool: Pool, argv: list[str], serves: bool) -> dict[str, Any]:
    """One pod's spec: the engine container (module doc); ``serves``: it answers HTTP (a leader)."""
    head = ENTRY_WORDS[fleet.engine]
    gpus = {fleet.gpu_resource: pool.gpus_per_node}
    container: dict[str, Any] = {
        "name": fleet.engine,
        "image": fleet.image.ref,
        "command": argv[:head],
        "args": argv[head:],
        "env": _env(fleet, pool),
        "resources": {"limits": dict(gpus), "requests": dict(gpus)},
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if serves:
        container["ports"] = [{"name": "http", "containerPort": fleet.port}]
        container["startupProbe"] = _probe(STARTUP_FAILURES, STARTUP_PERIOD_S)
        container["readinessProbe"] = _probe(3, 10)
    return {"containers": [container], "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}


def _template(fleet: Fleet, pool: Pool, argv: list[str], serves: bool) -> dict[str, Any]:
    labels = _selector(fleet, pool) | ({LABEL_SERVING: "true"} if serves else {})
    annotations = {ANNOTATION_LINK: fleet.link}
    if serves and pool.role == "prefill" and fleet.engine == "sglang":
        annotations[SGLANG_BOOTSTRAP_ANNOTATION] = str(SGLANG_BOOTSTRAP_PORT)
    return {"metadata": {"labels": labels, "annotations": annotations}, "spec": _pod(fleet, pool, argv, serves)}


def workload(fleet: Fleet, pool: Pool) -> Manifest:
    """The pool's Deployment, or its LeaderWorkerSet when a replica spans nodes (module doc)."""
    name = fleet.pool_name(pool)
    meta = _meta(fleet, name, {LABEL_POOL: pool.role})
    if pool.nodes == 1:
        argv = serve_argv(fleet, pool, fleet.port)
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": meta,
            "spec": {
                "replicas": pool.replicas,
                "selector": {"matchLabels": _selector(fleet, pool)},
                "template": _template(fleet, pool, argv, serves=True),
            },
        }
    leader = "$(LWS_LEADER_ADDRESS)"
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": meta,
        "spec": {
            "replicas": pool.replicas,
            "leaderWorkerTemplate": {
                "size": pool.nodes,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": _template(fleet, pool, serve_argv(fleet, pool, fleet.port, "0", leader), True),
                "workerTemplate": _template(
                    fleet, pool, serve_argv(fleet, pool, fleet.port, "$(LWS_WORKER_INDEX)", leader), False
                ),
            },
        },
    }


def service(fleet: Fleet, name: str, selector: dict[str, str]) -> Manifest:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(fleet, name),
        "spec": {"selector": selector, "ports": [{"name": "http", "port": fleet.port, "targetPort": "http"}]},
    }


def entry_service(fleet: Fleet) -> str:
    """The Service clients and the benchmark call: the router's, else the only pool's (both named after the fleet)."""
    return fleet.name


def pool_manifests(fleet: Fleet, pool: Pool) -> list[Manifest]:
    """The pool's workload and its Service."""
    name = fleet.name if fleet.policy is None else fleet.pool_name(pool)
    return [workload(fleet, pool), service(fleet, name, _selector(fleet, pool) | {LABEL_SERVING: "true"})]


def router_manifests(fleet: Fleet) -> list[Manifest]:
    """The router (module doc): its ServiceAccount and pod-reading Role, its Deployment and Service."""
    name = f"{fleet.name}-router"
    selectors = [[f"{k}={v}" for k, v in (_selector(fleet, p) | {LABEL_SERVING: "true"}).items()] for p in fleet.pools]
    argv = router_discovery_argv(fleet, fleet.port, selectors, "$(POD_NAMESPACE)")
    labels = {LABEL_NAME: fleet.name, LABEL_POOL: "router"}
    container = {
        "name": "router",
        "image": fleet.router_image.ref,
        "command": argv[:1] if fleet.engine == "vllm" else argv[:3],
        "args": argv[1:] if fleet.engine == "vllm" else argv[3:],
        "env": [{"name": "POD_NAMESPACE", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}}],
        "ports": [{"name": "http", "containerPort": fleet.port}],
        "readinessProbe": _probe(3, 10),
    }
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _meta(fleet, name)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": _meta(fleet, name), "rules": [rule]},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": _meta(fleet, name),
            "subjects": [{"kind": "ServiceAccount", "name": name}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": _meta(fleet, name, {LABEL_POOL: "router"}),
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"serviceAccountName": name, "containers": [container]},
                },
            },
        },
        service(fleet, fleet.name, labels),
    ]


def bench_result_file(fleet: Fleet) -> str:
    return f"{fleet.name}-bench.json" if fleet.engine == "vllm" else f"{fleet.name}-bench.jsonl"


def bench_job(fleet: Fleet) -> Manifest:
    """The benchmark Job: ``argv.bench_argv`` against the entry Service; the result JSON is its last log line."""
    path = f"{BENCH_RESULT_DIR}/{bench_result_file(fleet)}"
    argv = bench_argv(fleet, f"http://{entry_service(fleet)}:{fleet.port}", path)
    script = f"mkdir -p {BENCH_RESULT_DIR} && {shlex.join(argv)} && tail -n 1 {path}"
    container = {
        "name": "bench",
        "image": fleet.image.ref,
        "command": ["sh", "-c", script],
        "env": _env(fleet, fleet.pools[-1])[:1],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(fleet, f"{fleet.name}-bench"),
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
    }


def manifests(fleet: Fleet) -> dict[str, list[Manifest]]:
    """Every manifest of the fleet by file name (module doc)."""
    files = {f"{fleet.pool_name(p)}.yaml": pool_manifests(fleet, p) for p in fleet.pools}
    if fleet.policy is not None:
        files[f"{fleet.name}-router.yaml"] = router_manifests(fleet)
    files[f"{fleet.name}-bench.yaml"] = [bench_job(fleet)]
    return files
