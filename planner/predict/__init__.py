"""``kvplan predict``: what a serving benchmark would print for the scenario's deployment.

Modules, one job each:
  options       the benchmark's settings (``vllm bench serve`` / ``trtllm-bench`` options), validated
  workload      the requests as the benchmark draws them (random dataset lengths, send times, a trace)
  run           the simulation of one run (``predict``) and its notes
  vllm_report   the prediction as ``vllm bench serve`` prints it and as its result JSON
  trtllm        ``trtllm-bench throughput``'s statistics and report (``--max-throughput``)
  crosscheck    an imported ``vllm bench serve`` result beside the prediction for its settings

The statistics themselves are ``planner.sim.serve_metrics``'s (one definition).
"""
