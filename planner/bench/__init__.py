"""Edge package: a microbenchmark that measures the real machine and puts the
engine's prediction for the same shapes beside it (``python -m planner bench``).

Modules, one job each:
  host       facts about the machine: cores, last-level cache, RAM, GPU-name → profile key
  threads    pin and record BLAS / torch thread counts
  backend    numpy (CPU, fp32) and torch (CPU fp32, CUDA bf16) array back-ends; torch imported lazily
  micro      achieved matmul FLOP/s and streaming memory bandwidth
  decoder    a small Llama-like GQA decoder with a KV cache, written once for both back-ends
  plan       the shapes measured (full / quick, CPU / GPU)
  predict    the engine's prediction for exactly those shapes; errors; ridge batch
  results    the results file schema (pydantic), JSON / CSV / calibrated-profile TOML
  charts     plotly figures of predicted vs measured (pure; no streamlit)
  run        orchestration; cli: the ``bench`` subcommand

Importing this package never imports torch: only ``backend.TorchBackend`` does,
inside its constructor.
"""
