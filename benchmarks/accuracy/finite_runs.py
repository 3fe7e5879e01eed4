"""The trtllm-bench rows as the runs they were: a finite number of requests, simulated (``planner.predict``).

The steady-state metric (``max_throughput_output_tokens_per_s_per_gpu``, engine/saturation.py) has B requests in
flight forever; a perf-overview run queues ``num_requests`` fixed-length requests and ends when the last one does,
so with num_requests not far above B it also pays the ramp-up (every prompt of the first wave prefilled before
the decodes reach full batch) and the drain (the last wave's tail at a falling batch), and its steps are the
scheduler's, not the uniform mix of prompts and decodes the steady state assumes (Llama-3.1-8B FP8 on one H100,
1000/1000, trtllm@1.0: steady state 14,358 tok/s; simulated 13,942 at 542 requests = B, 13,088 at 3,000, 13,296
at 12,000 — the long run stays 7 % below the steady state).  The request counts are the perf-overview's own:

* TensorRT-LLM 1.0 (NVIDIA/TensorRT-LLM@00f37686:docs/source/performance/perf-overview.md, "For each input and
  output sequence length combination, the table below details the `$num_requests` that were used"): 128/128
  30000, 128/2048 3000, 128/4096 1500, 1000/2000 1500, 2048/128 3000, 2048/2048 1500, 5000/500 1500,
  1000/1000 3000, 500/2000 3000, 20000/2000 1000;
* ~1.1 / 1.2 (NVIDIA/TensorRT-LLM@585c7565:docs/source/developer-guide/perf-overview.md, "Number of Requests"):
  1024/1024 3000, 8192/1024 1500, 1024/8192 1500, 32768/1024 1000, 1024/32768 1000.

``kvplan predict --max-throughput --num-prompts N`` (the simulator with the engine's scheduler, trtllm-bench's
figures: planner/predict/trtllm.py) runs each row's scenario — the one ``benchmarks/accuracy/modern.py`` sizes
as trtllm-bench does.  Only layouts without data-parallel attention (dp = 1): the simulator times a step of a
data-parallel layout with its prefill chunks merged on one rank (``kernel_step_time.MeasuredStep``), which is not
how the ranks share prompts.  Printed beside the steady state of the same rows; the [kernels] fit stays on the
steady state, so this is a measurement of the finite-run effect, not the figure the targets use.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Sequence

from benchmarks.accuracy.modern_report import Scored
from planner.model.catalog import Catalog
from planner.predict.options import PredictOptions
from planner.predict.run import predict
from planner.predict.trtllm import trtllm_stats

#: (prompt, output) → the perf-overview's num_requests (module doc).
NUM_REQUESTS: dict[tuple[int, int], int] = {
    (128, 128): 30000,
    (128, 2048): 3000,
    (128, 4096): 1500,
    (1000, 2000): 1500,
    (2048, 128): 3000,
    (2048, 2048): 1500,
    (5000, 500): 1500,
    (1000, 1000): 3000,
    (500, 2000): 3000,
    (20000, 2000): 1000,
    (1024, 1024): 3000,
    (8192, 1024): 1500,
    (1024, 8192): 1500,
    (32768, 1024): 1000,
    (1024, 32768): 1000,
}


def _stats(errs: Sequence[float]) -> str:
    med = statistics.median(abs(e) for e in errs)
    return f"median |error| {med:6.1%}  median signed {statistics.median(errs):+6.1%}"


def report(scored: list[Scored], catalog: Catalog, moe_models: set[str]) -> None:
    """Each dp = 1 trtllm-bench throughput row simulated at its run's request count, beside its steady state."""
    print("## trtllm-bench rows as finite runs (benchmarks/accuracy/finite_runs.py; dp = 1 layouts)")
    groups: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)
    refused: list[str] = []
    for s in scored:
        c = s.case
        sc = c.scenario
        n = NUM_REQUESTS.get((sc.prompt, sc.output))
        if "trtllm-bench" not in c.row.engine or c.row.category != "throughput" or sc.dp != 1 or n is None:
            continue
        options = PredictOptions(num_prompts=n, input_len=sc.prompt, output_len=sc.output, max_throughput=True)
        try:
            simulated = trtllm_stats(predict(sc, catalog, options)).per_gpu_output_throughput_tokens_per_s
        except ValueError as exc:  # a ProblemsError (does not fit) or the simulator's size limit
            refused.append(f"{c.row.id} ({str(exc).splitlines()[0][:90]})")
            continue
        kind = "MoE" if sc.model in moe_models else "dense"
        pair = (s.pred.error_frac, simulated / c.row.measured - 1.0)
        groups[(kind, s.role)].append(pair)
        groups[(f"{kind} · {c.row.engine_profile}", s.role)].append(pair)
    for (name, role), pairs in sorted(groups.items()):
        steady = [a for a, _ in pairs]
        finite = [b for _, b in pairs]
        print(
            f"  {name:<20} {role:<9} finite run {_stats(finite)}  | steady state {_stats(steady)}  ({len(pairs)} rows)"
        )
    if refused:
        print(f"  not simulated ({len(refused)}): " + "; ".join(refused))
