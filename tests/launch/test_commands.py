"""Launch commands (planner.launch.commands, ``kvplan launch``): three scenarios, flags as the
engines document them (vLLM 0.19 engine/arg_utils.py; SGLang docs/advanced_features/server_arguments.md)."""

from __future__ import annotations

import io
import json
import shlex

import pytest

from planner.cli.main import main
from planner.engine.evaluate import resolve
from planner.launch.commands import LaunchError, launch_command
from planner.model.scenario import Scenario

#: every flag vLLM 0.19's ``vllm serve`` documents that the writer may use
VLLM_FLAGS = {
    "--tensor-parallel-size", "--max-num-seqs", "--max-num-batched-tokens", "--max-model-len",
    "--gpu-memory-utilization", "--dtype", "--kv-cache-dtype", "--block-size", "--enable-prefix-caching",
    "--no-enable-prefix-caching", "--disable-hybrid-kv-cache-manager", "--quantization", "--speculative-config",
}  # fmt: skip
SGLANG_FLAGS = {
    "--model-path", "--tp-size", "--mem-fraction-static", "--max-running-requests", "--chunked-prefill-size",
    "--context-length", "--dtype", "--kv-cache-dtype", "--page-size", "--quantization", "--disable-radix-cache",
    "--disable-hybrid-swa-memory", "--speculative-algorithm", "--speculative-draft-model-path",
    "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
}  # fmt: skip


def flags(argv):
    """--flag → value (None for a switch)."""
    out, i = {}, 0
    while i < len(argv):
        if argv[i].startswith("--"):
            takes = i + 1 < len(argv) and not argv[i + 1].startswith("--")
            out[argv[i]] = argv[i + 1] if takes else None
            i += 2 if takes else 1
        else:
            i += 1
    return out


def cmd(catalog, engine=None, **kw):
    return launch_command(resolve(Scenario(**kw), catalog), engine)


def test_default_scenario_vllm(catalog):
    c = cmd(catalog)
    assert c.argv[:3] == ("vllm", "serve", "meta-llama/Llama-3.1-8B")
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS
    assert f == {
        "--tensor-parallel-size": "1",
        "--max-num-seqs": "32",
        "--max-num-batched-tokens": "2048",
        "--max-model-len": "2304",
        "--gpu-memory-utilization": "0.9",
        "--dtype": "bfloat16",
        "--kv-cache-dtype": "auto",
        "--block-size": "16",
        "--enable-prefix-caching": None,
    }
    assert shlex.split(c.text().replace("\\\n", " ")) == list(c.argv)  # the shown text runs as the argv


def test_70b_fp8_weights_fp8_kv_and_a_draft_model_vllm(catalog):
    c = cmd(
        catalog, model="llama-3.1-70b", gpu="h200", tp=4, wdtype="fp8", kvdtype="fp8", batch=256, chunk=8192,
        prompt=8000, output=192, mem_util=0.92, spec=True, draft="llama-3.2-1b", gamma=3, prefix=0,
    )  # fmt: skip
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS
    assert f["--tensor-parallel-size"] == "4" and f["--max-model-len"] == "8192" and f["--kv-cache-dtype"] == "fp8"
    assert f["--quantization"] == "fp8" and "--dtype" not in f and "--no-enable-prefix-caching" in f
    assert json.loads(f["--speculative-config"]) == {
        "method": "draft_model",
        "model": "meta-llama/Llama-3.2-1B",
        "num_speculative_tokens": 3,
    }


def test_gemma_without_hybrid_manager_int4_checkpoint_sglang(catalog):
    c = cmd(catalog, "sglang", model="gemma-2-9b", hybrid_kv=False, wdtype="int4", quant="awq", batch=64, chunk=4096)
    assert c.argv[:3] == ("python", "-m", "sglang.launch_server")
    f = flags(c.argv)
    assert set(f) <= SGLANG_FLAGS
    assert f["--model-path"] == "google/gemma-2-9b" and f["--tp-size"] == "1" and f["--mem-fraction-static"] == "0.9"
    assert f["--max-running-requests"] == "64" and f["--chunked-prefill-size"] == "4096"
    assert f["--context-length"] == "2304" and f["--page-size"] == "16" and "--disable-hybrid-swa-memory" in f
    assert "--quantization" not in f  # the AWQ checkpoint declares itself
    assert any("AWQ" in n and "quantization_config" in n for n in c.notes)
    assert any("vLLM's rules" in n for n in c.notes)  # planned with the vLLM profile


def test_what_a_flag_cannot_say_is_a_note(catalog):
    c = cmd(catalog, kvdtype="int8")
    assert "--kv-cache-dtype" not in flags(c.argv) and any("no int8 KV cache" in n for n in c.notes)
    custom = cmd(catalog, model="custom", custom="L32-H4096-A32-G8-D128-F14336-V128256-C131072")
    assert custom.argv[2] == "<your-checkpoint>" and any("does not know its checkpoint" in n for n in custom.notes)
    with pytest.raises(LaunchError, match="kvplan writes launch commands for vllm, sglang"):
        cmd(catalog, "tgi")


def test_cli_launch(catalog):
    out, err = io.StringIO(), io.StringIO()
    assert main(["launch", "model=qwen2.5-7b&tp=2", "--engine", "sglang"], out=out, err=err) == 0, err.getvalue()
    assert out.getvalue().startswith("python -m sglang.launch_server \\\n  --model-path Qwen/Qwen2.5-7B")
    out = io.StringIO()
    assert main(["launch", "model=opt-13b", "--format", "json"], out=out, err=err) == 0
    assert json.loads(out.getvalue())["argv"][2] == "facebook/opt-13b"
    err = io.StringIO()
    assert main(["launch", "model=qwen2.5-7b&tp=8"], out=io.StringIO(), err=err) == 2
    assert "valid tp: 1, 2, 4" in err.getvalue()
