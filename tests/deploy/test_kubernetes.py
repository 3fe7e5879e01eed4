"""Kubernetes bundles for the four plans of tests/deploy/plans.py, both engines: every manifest validates
(kubernetes-validate, strict; LeaderWorkerSet against its CRD schema), every command line's flags are the
tool's, and every number in them is the plan's — read back from the YAML and compared with the scenario."""

from __future__ import annotations

import dataclasses
import math
import shlex

import jsonschema
import kubernetes_validate
import pytest

from planner.deploy.bundle import deploy_bundle
from planner.engine.defaults import mem_util_in_force
from planner.engine.evaluate import resolve
from planner.launch.commands import launch_command
from planner.model.catalog import load_catalog
from planner.model.scenario import Scenario
from tests.deploy.plans import ENGINES, PLANS, plan
from tests.deploy.validators import bad_flags, flags_of, tool_of, validate_manifest, yaml_docs

#: the images of the plans' engines: a name alone is the newest version (vLLM 0.33.0, SGLang 0.5.23)
IMAGES = {
    ("vllm", "NVIDIA"): "vllm/vllm-openai:v0.33.0",
    ("vllm", "AMD"): "vllm/vllm-openai-rocm:v0.33.0",
    ("sglang", "NVIDIA"): "lmsysorg/sglang:v0.5.23",
    ("sglang", "AMD"): "lmsysorg/sglang:v0.5.23-rocm700-mi30x",
}
ROUTERS = {"vllm": "vllm/vllm-router:v0.1.17", "sglang": None}  # SGLang's router runs in the engine's image
PORT = {"vllm": 8000, "sglang": 30000}


def docs_of(bundle) -> list[dict]:
    return [d for name, text in bundle.files.items() if name.endswith(".yaml") for d in yaml_docs(text)]


def pools_of(s: Scenario) -> dict[str, tuple[Scenario, int]]:
    """role → (one replica's scenario, replicas), computed from the link keys alone."""
    if s.prefill_replicas == 0:
        return {"colocated": (s, s.replicas)}
    chunk = s.prefill_chunk or s.chunk
    prefill = s.model_copy(
        update={"tp": s.prefill_tp or s.tp, "chunk": chunk, "batch": min(chunk, 256) * (s.prefill_dp or s.dp)}
    )
    return {"prefill": (prefill, s.prefill_replicas), "decode": (s, s.replicas)}


def workloads(docs: list[dict]) -> dict[str, dict]:
    kinds = ("Deployment", "LeaderWorkerSet")
    pools = {d["metadata"]["labels"]["kvplan.io/pool"]: d for d in docs if d["kind"] in kinds}
    pools.pop("router", None)
    return pools


def serving_container(w: dict) -> dict:
    spec = w["spec"]
    template = spec["template"] if w["kind"] == "Deployment" else spec["leaderWorkerTemplate"]["leaderTemplate"]
    return template["spec"]["containers"][0]


def memory_share(engine: str, s: Scenario) -> str:
    """The memory share a server of ``engine`` runs the plan at: the plan's mem_util, else that engine version's own
    (vLLM 0.33: 0.92; SGLang: its mem_fraction_static rule; planner/engine/defaults.py)."""
    catalog = load_catalog()
    r = resolve(s, catalog)
    target = r.engine if r.engine.kind == engine else catalog.engine(engine)
    return repr(mem_util_in_force(target, r.gpu, r.model, r.scenario))


def check_engine_flags(engine: str, f: dict[str, list[str]], s: Scenario) -> None:
    """The plan's numbers in one server's flags (planner/launch/commands.py maps them)."""
    ctx = str(s.prompt + s.output)
    if engine == "vllm":
        assert f["--tensor-parallel-size"] == [str(s.tp)]
        assert f["--max-num-seqs"] == [str(math.ceil(s.batch / s.dp))]
        assert f["--max-num-batched-tokens"] == [str(s.chunk)]
        assert f["--max-model-len"] == [ctx] and f["--gpu-memory-utilization"] == [memory_share(engine, s)]
        assert f.get("--pipeline-parallel-size", ["1"]) == [str(s.pp)]
    else:
        assert f["--tp-size"] == [str(s.tp * s.dp)] and f["--max-running-requests"] == [str(s.batch)]
        assert f["--chunked-prefill-size"] == [str(s.chunk * s.dp)] and f["--context-length"] == [ctx]
        assert f["--mem-fraction-static"] == [memory_share(engine, s)] and f.get("--pp-size", ["1"]) == [str(s.pp)]


def check_bench(engine: str, job: dict, s: Scenario, url: str) -> None:
    script = job["spec"]["template"]["spec"]["containers"][0]["command"][2]
    argv = shlex.split(script.split(" && ")[1])
    assert bad_flags(tool_of(argv), argv) == []
    f = flags_of(argv)
    assert f["--base-url"] == [url] and f["--request-rate"] == [repr(s.rate)]
    assert f["--num-prompts"] == [str(s.sim_requests)] and f["--seed"] == [str(s.seed)]
    assert f["--random-input-len"] == [str(s.prompt)] and f["--random-output-len"] == [str(s.output)]
    # the SLO's per-request targets: the plan's link gives slo_tpot_s alone, an old link's ITL target, which the
    # goodput holds against each request's TPOT (planner/sim/slo.py)
    tpot = s.slo_tpot_s if s.slo_tpot_s is not None else s.slo_itl_s
    assert tpot is not None and s.slo_ttft_s is not None
    assert f["--goodput"] == [f"ttft:{s.slo_ttft_s * 1000:g}", f"tpot:{tpot * 1000:g}"]
    assert f["--random-range-ratio"] == (["0"] if engine == "vllm" else ["1"])  # every request at the mean lengths
    if engine == "vllm":
        assert "--save-result" in f and f["--result-filename"][0].endswith(".json")
    else:
        assert f["--output-file"][0].endswith(".jsonl")


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", PLANS)
def test_manifests_validate_and_carry_the_plan(name, engine, catalog):
    s = plan(name)
    bundle = deploy_bundle(s, catalog, "kubernetes", engine)
    docs = docs_of(bundle)
    for d in docs:
        validate_manifest(d)
        assert d["metadata"]["annotations"]["kvplan.io/scenario"] == bundle.fleet.link
    for text in bundle.files.values():
        assert f"?{bundle.fleet.link}" in text  # every file names the link that produced it
    gpu = catalog.gpus[s.gpu]
    resource = "nvidia.com/gpu" if gpu.vendor == "NVIDIA" else "amd.com/gpu"
    found = workloads(docs)
    assert set(found) == set(pools_of(s))
    for role, (ps, replicas) in pools_of(s).items():
        w = found[role]
        gpus = ps.tp * ps.dp * ps.pp
        nodes = math.ceil(gpus / gpu.gpus_per_node)
        assert w["kind"] == ("LeaderWorkerSet" if nodes > 1 else "Deployment")
        assert w["spec"]["replicas"] == replicas
        if nodes > 1:
            assert w["spec"]["leaderWorkerTemplate"]["size"] == nodes
        c = serving_container(w)
        assert c["image"] == IMAGES[engine, gpu.vendor]
        assert c["resources"]["limits"] == c["resources"]["requests"] == {resource: gpus // nodes}
        assert c["readinessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
        assert c["ports"] == [{"name": "http", "containerPort": PORT[engine]}]
        pod = (w["spec"]["template"] if nodes == 1 else w["spec"]["leaderWorkerTemplate"]["leaderTemplate"])["spec"]
        assert {"name": "dshm", "emptyDir": {"medium": "Memory"}} in pod["volumes"]
        assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
        argv = c["command"] + c["args"]
        assert bad_flags(tool_of(argv), argv) == []
        launch = list(launch_command(resolve(ps, catalog), engine, catalog).argv)
        if nodes == 1:
            assert argv[: len(launch)] == launch  # the launch command, as `kvplan launch` prints it
        check_engine_flags(engine, flags_of(argv), ps)
    routers = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["labels"]["kvplan.io/pool"] == "router"]
    assert len(routers) == (1 if s.router != "round_robin" or s.prefill_replicas else 0)
    for r in routers:
        c = r["spec"]["template"]["spec"]["containers"][0]
        assert c["image"] == (ROUTERS[engine] or IMAGES[engine, gpu.vendor])
        argv = c["command"] + c["args"]
        assert bad_flags(tool_of(argv), argv) == []
        want = "cache_aware" if s.router == "prefix_affinity" else "round_robin"
        assert flags_of(argv)["--policy"] == [want]
    (job,) = [d for d in docs if d["kind"] == "Job"]
    check_bench(engine, job, s, f"http://{bundle.fleet.name}:{PORT[engine]}")


def test_a_multi_node_replica_is_a_leader_worker_set_whose_nodes_find_the_leader(catalog):
    s = plan("two-node-pp2")
    for engine, rank, leader in (
        ("vllm", "--node-rank", "--master-addr"),
        ("sglang", "--node-rank", "--dist-init-addr"),
    ):
        (w,) = workloads(docs_of(deploy_bundle(s, catalog, "kubernetes", engine))).values()
        t = w["spec"]["leaderWorkerTemplate"]
        lead = flags_of(t["leaderTemplate"]["spec"]["containers"][0]["args"])
        work = flags_of(t["workerTemplate"]["spec"]["containers"][0]["args"])
        assert lead["--nnodes"] == work["--nnodes"] == ["2"] and lead[rank] == ["0"]
        assert work[rank] == ["$(LWS_WORKER_INDEX)"] and lead[leader][0].startswith("$(LWS_LEADER_ADDRESS)")
        assert ("--headless" in work) == (engine == "vllm")  # vLLM's other nodes run no API server
        assert "readinessProbe" not in t["workerTemplate"]["spec"]["containers"][0]


def test_disaggregated_pools_get_their_roles_and_the_router_finds_both(catalog):
    s = plan("disaggregated")
    docs = docs_of(deploy_bundle(s, catalog, "kubernetes", "vllm"))
    found = workloads(docs)
    for role, kv_role in (("prefill", "kv_producer"), ("decode", "kv_consumer")):
        c = serving_container(found[role])
        assert f'"kv_role":"{kv_role}"' in flags_of(c["args"])["--kv-transfer-config"][0]
        assert {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in c[
            "env"
        ]
    router = next(d for d in docs if d["kind"] == "Deployment" and "router" in d["metadata"]["name"])
    f = flags_of(router["spec"]["template"]["spec"]["containers"][0]["args"])
    assert "--vllm-pd-disaggregation" in f and f["--kv-connector"] == ["nixl"]
    assert "kvplan.io/pool=prefill" in f["--prefill-selector"] and "kvplan.io/pool=decode" in f["--decode-selector"]
    sg = workloads(docs_of(deploy_bundle(s, catalog, "kubernetes", "sglang")))
    pre = sg["prefill"]["spec"]["template"]
    assert flags_of(serving_container(sg["prefill"])["args"])["--disaggregation-mode"] == ["prefill"]
    assert pre["metadata"]["annotations"]["sglang.ai/bootstrap-port"] == "8998"


def test_the_image_is_the_release_of_the_engine_version_the_plan_used(catalog):
    old = catalog.engine("vllm@0.19")
    newer = old.model_copy(update={"key": "vllm@0.33", "version": "0.33.0"})
    cat = dataclasses.replace(catalog, engines={**catalog.engines, newer.key: newer})
    images = {}
    for engine in ("vllm@0.19", "vllm@0.33", "vllm"):  # a name alone: the newest version
        s = plan("mi300x").with_changes(engine=engine)
        c = serving_container(workloads(docs_of(deploy_bundle(s, cat, "kubernetes")))["colocated"])
        images[engine] = c["image"]
    assert images == {
        "vllm@0.19": "vllm/vllm-openai-rocm:v0.19.0",
        "vllm@0.33": "vllm/vllm-openai-rocm:v0.33.0",
        "vllm": "vllm/vllm-openai-rocm:v0.33.0",
    }


def test_the_validators_refuse_a_broken_manifest(catalog):
    w = workloads(docs_of(deploy_bundle(plan("colocated-h100"), catalog, "kubernetes", "vllm")))["colocated"]
    with pytest.raises(kubernetes_validate.ValidationError):
        validate_manifest({**w, "spec": {**w["spec"], "replicas": "three"}})
    with pytest.raises(kubernetes_validate.ValidationError):  # strict: an unknown field
        validate_manifest({**w, "spec": {**w["spec"], "replica": 3}})
    lws = workloads(docs_of(deploy_bundle(plan("two-node-pp2"), catalog, "kubernetes", "vllm")))["colocated"]
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest({**lws, "spec": {**lws["spec"], "replicas": "two"}})
    assert bad_flags("vllm_serve", ["vllm", "serve", "m", "--max-num-seq", "8"]) == [
        "vllm_serve: unknown flag --max-num-seq"
    ]
    assert bad_flags("vllm_router", ["vllm-router", "--policy", "prefix"])  # not one of its policies
