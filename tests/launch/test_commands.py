"""Launch commands (planner.launch.commands, ``kvplan launch``): three scenarios, flags as the
engines document them (vLLM 0.19 and 0.33 engine/arg_utils.py; SGLang 0.5.23 srt/server_args.py; every flag is
also checked against the version's parser table in tests/launch/test_flag_tables.py)."""

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
    "--no-enable-prefix-caching", "--disable-prefix-caching", "--disable-hybrid-kv-cache-manager", "--quantization",
    "--speculative-config",
}  # fmt: skip
SGLANG_FLAGS = {
    "--model-path", "--tp-size", "--mem-fraction-static", "--max-running-requests", "--chunked-prefill-size",
    "--context-length", "--dtype", "--kv-cache-dtype", "--page-size", "--quantization", "--disable-radix-cache",
    "--disable-hybrid-swa-memory", "--speculative-algorithm", "--speculative-draft-model-path",
    "--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens",
    "--speculative-ngram-max-bfs-breadth",
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


def cmd(catalog, writer=None, **kw):
    """The command ``writer`` (vllm, sglang; default: the scenario's engine) writes for the scenario ``kw``."""
    return launch_command(resolve(Scenario(**kw), catalog), writer, catalog)


def test_default_scenario_vllm(catalog):
    """vLLM 0.33 (the default): its own gpu_memory_utilization default 0.92 (config/cache.py:215) and no
    --block-size (the attention backend picks, platforms/interface.py:750); vLLM 0.19 as before."""
    c = cmd(catalog)
    assert c.argv[:3] == ("vllm", "serve", "meta-llama/Llama-3.1-8B") and c.version == "vLLM 0.33.0"
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS
    assert f == {
        "--tensor-parallel-size": "1",
        "--max-num-seqs": "32",
        "--max-num-batched-tokens": "2048",
        "--max-model-len": "2304",
        "--gpu-memory-utilization": "0.92",
        "--dtype": "bfloat16",
        "--kv-cache-dtype": "auto",
        "--enable-prefix-caching": None,
    }
    assert shlex.split(c.text().replace("\\\n", " ")) == list(c.argv)  # the shown text runs as the argv
    old = cmd(catalog, engine="vllm@0.19")
    assert old.version == "vLLM 0.19.0"
    assert flags(old.argv) == {**f, "--gpu-memory-utilization": "0.9", "--block-size": "16"}


def test_70b_fp8_weights_fp8_kv_and_a_draft_model_vllm(catalog):
    c = cmd(
        catalog, model="llama-3.1-70b", gpu="h200", tp=4, wdtype="fp8", kvdtype="fp8", batch=256, chunk=8192,
        prompt=8000, output=192, mem_util=0.92, spec=True, draft="llama-3.2-1b", gamma=3, prefix=0,
    )  # fmt: skip
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS
    assert f["--tensor-parallel-size"] == "4" and f["--max-model-len"] == "8192" and f["--kv-cache-dtype"] == "fp8"
    # vLLM 0.33's spellings (weight_utils.py:357: fp8 → fp8_per_tensor; --disable-prefix-caching)
    assert f["--quantization"] == "fp8_per_tensor" and "--dtype" not in f and "--disable-prefix-caching" in f
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
    # SGLang's own mem_fraction_static: its 10 GiB floor on an 81,559 MiB H100 (memory_hook.py:331-332)
    assert f["--model-path"] == "google/gemma-2-9b" and f["--tp-size"] == "1" and f["--mem-fraction-static"] == "0.874"
    assert f["--max-running-requests"] == "64" and f["--chunked-prefill-size"] == "4096"
    assert f["--context-length"] == "2304" and "--page-size" not in f and "--disable-hybrid-swa-memory" in f
    assert c.version == "SGLang 0.5.23"
    assert "--quantization" not in f  # the AWQ checkpoint declares itself
    assert any("AWQ" in n and "quantization_config" in n for n in c.notes)
    assert any("vLLM's rules" in n for n in c.notes)  # planned with the vLLM profile


def test_what_a_flag_cannot_say_is_a_note(catalog):
    c = cmd(catalog, kvdtype="int8", engine="vllm@0.19")
    assert "--kv-cache-dtype" not in flags(c.argv) and any("vLLM 0.19.0 has no int8 KV cache" in n for n in c.notes)
    # vLLM 0.33 has one (config/cache.py:63 int8_per_token_head) for dense models; its MLA backends list none
    assert flags(cmd(catalog, kvdtype="int8").argv)["--kv-cache-dtype"] == "int8_per_token_head"
    mla = cmd(catalog, kvdtype="int8", model="deepseek-v3", tp=8, wdtype="fp8", quant="fp8-block")
    assert "--kv-cache-dtype" not in flags(mla.argv) and any("for an MLA model" in n for n in mla.notes)
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


# parallel layouts (issue 15): flags read in vLLM 0.19.0 engine/arg_utils.py:830-956 and SGLang 0.5.23 srt/arg_groups
VLLM_LAYOUT_FLAGS = {
    "--pipeline-parallel-size", "--data-parallel-size", "--enable-expert-parallel", "--enable-eplb", "--eplb-config",
    "--all2all-backend", "--enable-dbo", "--nnodes", "--node-rank", "--master-addr",
}  # fmt: skip
SGLANG_LAYOUT_FLAGS = {
    "--pp-size", "--attn-dp-size", "--ep-size", "--moe-a2a-backend", "--enable-eplb",
    "--ep-num-redundant-experts", "--enable-two-batch-overlap", "--nnodes", "--node-rank", "--dist-init-addr",
}  # fmt: skip


def test_llama_405b_on_two_nodes_tp8_pp2(catalog):
    c = cmd(catalog, model="llama-3.1-405b", tp=8, pp=2)
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS | VLLM_LAYOUT_FLAGS
    assert f["--tensor-parallel-size"] == "8" and f["--pipeline-parallel-size"] == "2"
    assert f["--nnodes"] == "2" and f["--node-rank"] == "0"
    assert any("--node-rank i --headless" in n for n in c.notes)
    s = flags(cmd(catalog, "sglang", model="llama-3.1-405b", tp=8, pp=2).argv)
    assert s["--tp-size"] == "8" and s["--pp-size"] == "2" and s["--nnodes"] == "2"


def test_deepseek_v3_data_parallel_attention_and_expert_parallel(catalog):
    kw = dict(model="deepseek-v3", wdtype="fp8", quant="fp8-block", tp=1, dp=72, ep=72, batch=9216)
    c = cmd(catalog, **kw, redundant_experts=32, tbo=True)
    f = flags(c.argv)
    assert set(f) <= VLLM_FLAGS | VLLM_LAYOUT_FLAGS
    assert f["--data-parallel-size"] == "72" and "--enable-expert-parallel" in f and "--enable-eplb" in f
    assert json.loads(f["--eplb-config"]) == {"num_redundant_experts": 32}
    assert f["--all2all-backend"] == "deepep_low_latency" and "--enable-dbo" in f
    assert f["--max-num-seqs"] == "128" and f["--nnodes"] == "9"  # max_num_seqs is per DP engine: 9,216 / 72
    s = cmd(catalog, "sglang", **kw, redundant_experts=32, tbo=True)
    g = flags(s.argv)
    assert set(g) <= SGLANG_FLAGS | SGLANG_LAYOUT_FLAGS
    # tp_size: the stage's; 0.5.23's --attn-dp-size (server_args.py:417-424 deprecates --enable-dp-attention)
    assert g["--tp-size"] == "72" and g["--attn-dp-size"] == "72" and "--enable-dp-attention" not in g
    assert g["--ep-size"] == "72" and g["--moe-a2a-backend"] == "deepep" and "--enable-two-batch-overlap" in g
    assert g["--ep-num-redundant-experts"] == "32"
    assert g["--chunked-prefill-size"] == str(2048 * 72)  # SGLang divides it among the dp ranks
    one_node = flags(cmd(catalog, model="mixtral-8x7b", tp=2, ep=2, eplb=False).argv)
    assert "--enable-expert-parallel" in one_node and "--enable-eplb" not in one_node and "--nnodes" not in one_node
