"""Drawn scenarios made ones the serving engine accepts (``planner.engine.validity``): the test
generators draw tp, batch, chunk and lengths freely; vLLM refuses a tp that does not split the
model, a batch above the chunk, and a context beyond the window, so a test that is about
something else draws again inside those rules."""

from __future__ import annotations

from typing import Any

from planner.engine.validity import valid_tps
from planner.model.catalog import Catalog
from planner.model.quant_support import weight_support
from planner.model.quantization import scheme_for


def valid_kw(kw: dict[str, Any], catalog: Catalog) -> dict[str, Any]:
    """``kw`` with tp moved to the largest valid one at or below it (else the smallest), the chunk
    raised to the batch, and output then prompt shortened to fit the context window."""
    kw = dict(kw)
    model = catalog.models[kw.get("model", "llama-3.1-8b")]
    gpu = catalog.profile(kw.get("gpu", "h100-sxm"))
    if kw.get("wdtype") and gpu is not None:  # a format the engine runs on this GPU (quant_support)
        scheme = scheme_for(kw["wdtype"], kw.get("quant", ""))
        if not weight_support(kw.get("engine", "vllm"), scheme.key, gpu).runs:
            kw["wdtype"], kw["quant"] = "bf16", ""
    draft = catalog.models.get(kw.get("draft", "")) if kw.get("spec") else None
    group = kw.get("qgroup", 128) if kw.get("wdtype") == "int4" else 0
    tps = valid_tps(model, group, draft)
    for smaller in (64, 32, 0):  # a group size the model's widths do not divide (gpt-oss: 2880 / 128)
        if tps:
            break
        kw["qgroup"] = group = smaller
        tps = valid_tps(model, group, draft)
    tp = kw.get("tp", 1)
    kw["tp"] = max((t for t in tps if t <= tp), default=tps[0])
    if "batch" in kw or "chunk" in kw:
        kw["chunk"] = max(kw.get("chunk", 2048), kw.get("batch", 32))
    window = model.context_window_tokens
    output = min(kw.get("output", 256), max(window // 2, 1))
    prompt = min(kw.get("prompt", 2048), window - output)
    if "output" in kw or output != 256:
        kw["output"] = output
    if "prompt" in kw or prompt != 2048:
        kw["prompt"] = prompt
    if "prefix" in kw:
        kw["prefix"] = min(kw["prefix"], prompt)
    return kw
