"""The command lines a deployment runs: one replica's server (the ``kvplan launch`` command plus where it
listens, which node of a multi-node replica it is, and its role in a disaggregated fleet), the router, and the
benchmark.  Pure: lists of words, each flag checked in the tool's own source.

Server, beyond ``kvplan launch`` (``planner.launch.commands``):
  --host 0.0.0.0 --port P                     every engine (SGLang listens on 127.0.0.1 by default)
  node i of a multi-node replica              vLLM: --node-rank i --master-addr ADDR, and --headless on i > 0
                                              (vllm/engine/arg_utils.py 0.19.0); SGLang: --node-rank i
                                              --dist-init-addr ADDR:5000
  vLLM prefill / decode pool                  --kv-transfer-config {"kv_connector":"NixlConnector","kv_role":
                                              "kv_producer" | "kv_consumer"}, VLLM_NIXL_SIDE_CHANNEL_HOST/PORT
                                              (vllm docs/features/nixl_connector_usage.md)
  SGLang prefill / decode pool                --disaggregation-mode prefill | decode, the prefill pool's
                                              --disaggregation-bootstrap-port (SGLang 0.5.23 server_args)
Router (vllm-project/router 0.1.17 router_args.py; sgl-project/sglang sglang_router/router_args.py):
  vllm-router | python3 -m sglang_router.launch_router  --host 0.0.0.0 --port P --policy POLICY, and either
  the replicas' URLs (--worker-urls …; P/D: --prefill URL [BOOTSTRAP] … --decode URL …) or Kubernetes
  discovery (--service-discovery --selector k=v … | --prefill-selector … --decode-selector …,
  --service-discovery-port, --service-discovery-namespace); P/D: vLLM --vllm-pd-disaggregation --kv-connector
  nixl, SGLang --pd-disaggregation.
Benchmark (the result file ``kvplan calibrate`` reads, ``planner.calibration.serving_results``):
  vllm bench serve --backend vllm --base-url URL --model M --dataset-name random --random-input-len P
    --random-output-len O --random-range-ratio 0 --ignore-eos --num-prompts N --request-rate R --seed S
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,Q --goodput ttft:MS tpot:MS
    --save-result --result-dir DIR --result-filename F            (vllm/benchmarks/serve.py, datasets.py 0.19.0)
  python -m sglang.benchmark.serving --backend sglang --base-url URL --model M --dataset-name random-ids
    --random-input-len P --random-output-len O --random-range-ratio 1 --num-prompts N --request-rate R
    --seed S --goodput ttft:MS tpot:MS --output-file F               (sglang/benchmark/serving.py 0.5.23;
    ``sglang.bench_serving`` is its deprecated alias; random-ids draws token ids, random downloads ShareGPT)
  Lengths: every request has the plan's mean prompt P and output O (vLLM range ratio 0; SGLang draws
  U[O·r, O], so r = 1), because the launch command's max_model_len is exactly P + O: a longer-than-mean
  request would be refused.  Rate: the plan's arrivals (Poisson in both tools), N = the plan's sim_requests.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from planner.deploy.fleet import Fleet, Pool
from planner.sim.slo import Slo
from planner.units import MS_PER_S

#: Words before a server's own arguments: the container's command (the rest are its args).
ENTRY_WORDS = {"vllm": 2, "sglang": 3}  # vllm serve | python -m sglang.launch_server
#: SGLang's default --disaggregation-bootstrap-port (0.5.23 server_args), and the dist-init port the launch writes.
SGLANG_BOOTSTRAP_PORT = 8998
SGLANG_DIST_PORT = 5000
#: vLLM's default VLLM_NIXL_SIDE_CHANNEL_PORT (vllm/envs.py); each data-parallel rank takes base + rank.
NIXL_SIDE_CHANNEL_PORT = 5600
VLLM_ROLE = {"prefill": "kv_producer", "decode": "kv_consumer"}


@dataclass(frozen=True)
class Endpoint:
    """Where one replica serves, as a router or a benchmark reaches it."""

    host: str
    port: int
    bootstrap_port: int | None = None  # SGLang prefill replicas

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _set(argv: list[str], flag: str, value: str) -> None:
    """The value after ``flag`` (which the launch writer always writes for a multi-node replica)."""
    argv[argv.index(flag) + 1] = value


def serve_argv(
    fleet: Fleet, pool: Pool, port: int, node: str = "0", leader: str = "", bootstrap_port: int | None = None
) -> list[str]:
    """One node of one replica of ``pool`` (module doc): the launch command, node ``node`` of the replica
    with the leader (node 0) at address ``leader``, listening on ``port``."""
    argv = list(pool.command.argv)
    if pool.nodes > 1:
        _set(argv, "--node-rank", node)
        if fleet.engine == "vllm":
            _set(argv, "--master-addr", leader)
            if node != "0":
                argv.append("--headless")
        else:
            _set(argv, "--dist-init-addr", f"{leader}:{SGLANG_DIST_PORT}")
    argv += ["--host", "0.0.0.0", "--port", str(port)]
    if pool.role == "colocated":
        return argv
    if fleet.engine == "vllm":
        config = {"kv_connector": "NixlConnector", "kv_role": VLLM_ROLE[pool.role]}
        return argv + ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]
    argv += ["--disaggregation-mode", pool.role]
    if pool.role == "prefill":
        argv += ["--disaggregation-bootstrap-port", str(bootstrap_port or SGLANG_BOOTSTRAP_PORT)]
    return argv


def serve_env(fleet: Fleet, pool: Pool, side_host: str, side_port: int = NIXL_SIDE_CHANNEL_PORT) -> dict[str, str]:
    """Environment of a disaggregated vLLM replica: where its NIXL side channel listens (module doc)."""
    if pool.role == "colocated" or fleet.engine != "vllm":
        return {}
    return {"VLLM_NIXL_SIDE_CHANNEL_HOST": side_host, "VLLM_NIXL_SIDE_CHANNEL_PORT": str(side_port)}


def _router_head(fleet: Fleet, port: int) -> list[str]:
    exe = ["vllm-router"] if fleet.engine == "vllm" else ["python3", "-m", "sglang_router.launch_router"]
    argv = exe + ["--host", "0.0.0.0", "--port", str(port), "--policy", fleet.policy or "round_robin"]
    if fleet.disaggregated:
        vllm = ["--vllm-pd-disaggregation", "--kv-connector", "nixl"]
        argv += vllm if fleet.engine == "vllm" else ["--pd-disaggregation"]
    return argv


def router_argv(fleet: Fleet, port: int, endpoints: Sequence[Sequence[Endpoint]]) -> list[str]:
    """The router in front of fixed replicas: ``endpoints`` per pool, in ``fleet.pools`` order."""
    argv = _router_head(fleet, port)
    if not fleet.disaggregated:
        return argv + ["--worker-urls", *(e.url for e in endpoints[0])]
    for e in endpoints[0]:
        argv += ["--prefill", e.url] + ([str(e.bootstrap_port)] if e.bootstrap_port is not None else [])
    for e in endpoints[1]:
        argv += ["--decode", e.url]
    return argv


def router_discovery_argv(fleet: Fleet, port: int, selectors: Sequence[Sequence[str]], namespace: str) -> list[str]:
    """The router finding the replicas' pods itself (Kubernetes): ``selectors`` (``key=value`` words) per pool."""
    argv = _router_head(fleet, port) + ["--service-discovery"]
    if fleet.disaggregated:
        argv += ["--prefill-selector", *selectors[0], "--decode-selector", *selectors[1]]
    else:
        argv += ["--selector", *selectors[0]]
    return argv + ["--service-discovery-port", str(fleet.port), "--service-discovery-namespace", namespace]


def _ms(seconds: float) -> str:
    return f"{seconds * MS_PER_S:g}"


def goodput_items(slo: Slo) -> list[str]:
    """The benchmark's per-request goodput targets (``vllm bench serve --goodput``: ttft, tpot, e2el in ms), the
    SLO's (``planner.sim.slo``: the TPOT target, else the ITL target, as its goodput holds them)."""
    targets = (("ttft", slo.ttft_s), ("tpot", slo.goodput_tpot_s), ("e2el", slo.e2e_s))
    return [f"{name}:{_ms(t)}" for name, t in targets if t is not None]


def _pct(slo: Slo) -> str:
    """The percentile the benchmark reports beside the median: the SLO's (p99 where it holds means: the
    benchmark reports the means anyway)."""
    return "99" if slo.is_mean else f"{slo.q:g}"


def bench_argv(fleet: Fleet, base_url: str, result_path: str) -> list[str]:
    """The benchmark of the deployed endpoint at the plan's rate and lengths (module doc); the result file
    ``kvplan calibrate`` reads is written to ``result_path`` (a directory/name.json or .jsonl)."""
    s = fleet.serving
    model = served_model(fleet)
    slo = Slo.of(s)
    goodput = ["--goodput", *goodput_items(slo)] if goodput_items(slo) else []
    lengths = ["--random-input-len", str(s.prompt), "--random-output-len", str(s.output)]
    load = ["--num-prompts", str(s.sim_requests), "--request-rate", repr(s.rate), "--seed", str(s.seed)]
    if fleet.engine == "vllm":
        folder, _, name = result_path.rpartition("/")
        return [
            *("vllm", "bench", "serve", "--backend", "vllm", "--base-url", base_url, "--model", model),
            *("--dataset-name", "random", *lengths, "--random-range-ratio", "0", "--ignore-eos", *load),
            *("--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", f"50,{_pct(slo)}", *goodput),
            *("--save-result", "--result-dir", folder or ".", "--result-filename", name),
        ]
    return [
        *("python", "-m", "sglang.benchmark.serving", "--backend", "sglang", "--base-url", base_url, "--model", model),
        *("--dataset-name", "random-ids", *lengths, "--random-range-ratio", "1", *load, *goodput),
        *("--output-file", result_path),
    ]


def served_model(fleet: Fleet) -> str:
    """The checkpoint the servers load (the launch command's model word), for the benchmark's tokenizer."""
    argv = fleet.pools[-1].command.argv
    return argv[2] if fleet.engine == "vllm" else argv[argv.index("--model-path") + 1]
