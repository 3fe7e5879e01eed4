"""Every flag ``kvplan launch`` writes exists in the flag table of the engine version in force, with a value its
parser takes (engine_profiles/<engine>/<version>-flags.json, written by tools/extract_engine_flags.py from vLLM
0.19.0's and 0.33.0's ``vllm serve`` parser and SGLang 0.5.23's ServerArgs parser); commands the engine's own
validation refuses (SGLang's n-gram top-k with a page above 1) are a failure here."""

from __future__ import annotations

import json

import pytest

from planner.engine.evaluate import resolve
from planner.launch.commands import launch_command
from planner.launch.flags import flag_problems
from planner.model.engine_flags import load_flag_table, parse_flag_table
from planner.model.scenario import Scenario
from tests.launch.test_commands import flags

ENGINES = ("vllm@0.19", "vllm@0.33", "sglang@0.5.23")
#: scenarios that reach every branch of both writers (speculation, quantisation, KV dtypes, layouts, nodes)
GRID = [
    {},
    dict(block=32, mem_util=0.85, prefix=0),
    dict(kvdtype="fp8"),
    dict(kvdtype="int8"),
    dict(wdtype="fp8", quant="fp8", prefix=0),
    dict(model="llama-3.1-70b", gpu="h200", tp=4, wdtype="fp8", kvdtype="fp8", spec=True, draft="llama-3.2-1b"),
    dict(spec=True),
    dict(spec=True, block=16),
    dict(spec=True, gpu="b200"),
    dict(model="gemma-2-9b", hybrid_kv=False, wdtype="int4", quant="awq", batch=64, chunk=4096),
    dict(model="mistral-7b", prompt=30000, output=300),
    dict(model="llama-3.1-405b", tp=8, pp=2),
    dict(model="mixtral-8x7b", tp=2, ep=2, eplb=False),
    dict(model="deepseek-v3", wdtype="fp8", quant="fp8-block", tp=1, dp=72, ep=72, batch=9216, redundant_experts=32,
         tbo=True),
    dict(model="deepseek-v3", wdtype="fp8", quant="fp8-block", tp=8, kvdtype="fp8", gpu="h200"),
    dict(model="custom", custom="L32-H4096-A32-G8-D128-F14336-V128256-C131072"),
    dict(batch=512, chunk=8192),
]  # fmt: skip


def commands(catalog, kw, engine_key):
    """The vLLM and the SGLang command of one scenario planned on ``engine_key`` (each spelt for the version in
    force: the scenario's own, else the newest of the other engine)."""
    r = resolve(Scenario(**kw, engine=engine_key), catalog)
    return [launch_command(r, name, catalog) for name in ("vllm", "sglang")]


def test_every_shipped_writer_has_its_versions_flag_table(catalog):
    for key in ENGINES:
        table = load_flag_table(key)
        assert table is not None, key
        assert table.version == catalog.engines[key].version and table.engine == catalog.engines[key].kind
    assert load_flag_table("trtllm@0.9") is None  # no launch writer, no table


@pytest.mark.parametrize("engine_key", ENGINES)
@pytest.mark.parametrize("kw", GRID, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items())[:60] or "default")
def test_every_flag_launch_writes_is_in_its_versions_table(catalog, kw, engine_key):
    for cmd in commands(catalog, kw, engine_key):
        table = load_flag_table(cmd.profile_key)
        assert table is not None and cmd.version == f"{catalog.engines[cmd.profile_key].label}"
        assert flag_problems(cmd.argv, table) == [], (cmd.profile_key, cmd.argv)
        assert sglang_refusal(cmd.argv, table) is None, cmd.argv


def sglang_refusal(argv, table) -> str | None:
    """SGLang 0.5.23's n-gram check, arg_groups/speculative_hook.py:1285 _handle_ngram: its top-k is always
    --speculative-ngram-max-bfs-breadth (default 10); "speculative_eagle_topk(..) > 1 with page_size(..) > 1 is
    unstable … only supported for the 'flashinfer' backend"; "ngram speculative decoding does not support dp
    attention".  The page is --page-size, else 1 (arg_groups/overrides.py:1341-1363; NGRAM keeps SGLang off
    trtllm_mha, model_override_base.py:277-320)."""
    f = flags(argv)
    if table.engine != "sglang" or f.get("--speculative-algorithm") != "NGRAM":
        return None
    topk = int(
        f.get("--speculative-ngram-max-bfs-breadth") or table.flags["--speculative-ngram-max-bfs-breadth"].default
    )
    page = int(f.get("--page-size") or 1)
    if topk > 1 and page > 1 and f.get("--attention-backend") != "flashinfer":
        return f"speculative_eagle_topk({topk}) > 1 with page_size({page}) > 1"
    if int(f.get("--attn-dp-size") or 1) > 1 or "--enable-dp-attention" in f:
        return "ngram speculative decoding does not support dp attention"
    return None


def test_ngram_on_sglang_at_page_16_is_a_chain_of_drafts(catalog):
    """Issue 27 item 4: kvplan wrote NGRAM with --page-size 16, which SGLang refuses on an H100 (fa3); at page 16
    it now sets the BFS breadth (= top-k) to 1, at the default page (1) it leaves SGLang's tree."""
    table = load_flag_table("sglang@0.5.23")
    r = resolve(Scenario(spec=True, block=16, engine="sglang"), catalog)
    f = flags(launch_command(r).argv)
    assert f["--page-size"] == "16" and f["--speculative-ngram-max-bfs-breadth"] == "1"
    old = ["python", "-m", "sglang.launch_server", "--page-size", "16", "--speculative-algorithm", "NGRAM"]
    assert sglang_refusal(old, table) == "speculative_eagle_topk(10) > 1 with page_size(16) > 1"
    default = flags(launch_command(resolve(Scenario(spec=True, engine="sglang"), catalog)).argv)
    assert "--page-size" not in default and "--speculative-ngram-max-bfs-breadth" not in default


def test_the_versions_spellings(catalog):
    """vLLM 0.33.0 model_executor/model_loader/weight_utils.py:357-360 "--quantization fp8 is deprecated for online
    quantization; use --quantization fp8_per_tensor instead" (since 0.31.0); boolean flags --enable-X/--disable-X
    (utils/argparse_utils.py:120: --no-enable-prefix-caching is hidden); --kv-cache-dtype int8_per_token_head
    (config/cache.py:63); no --block-size unless set (the backend's own block).  SGLang 0.5.23 server_args.py:417-424
    --enable-dp-attention deprecated for --attn-dp-size; --cuda-graph-max-bs is gone (-decode / -prefill)."""
    kw = dict(wdtype="fp8", quant="fp8", prefix=0, kvdtype="int8")
    new = flags(launch_command(resolve(Scenario(**kw), catalog)).argv)
    old = flags(launch_command(resolve(Scenario(**kw, engine="vllm@0.19"), catalog)).argv)
    assert (new["--quantization"], old["--quantization"]) == ("fp8_per_tensor", "fp8")
    assert "--disable-prefix-caching" in new and "--no-enable-prefix-caching" in old
    assert new["--kv-cache-dtype"] == "int8_per_token_head" and "--kv-cache-dtype" not in old
    assert "--block-size" not in new and old["--block-size"] == "16"
    assert (new["--gpu-memory-utilization"], old["--gpu-memory-utilization"]) == ("0.92", "0.9")
    t33, t19, sgl = load_flag_table("vllm@0.33"), load_flag_table("vllm@0.19"), load_flag_table("sglang@0.5.23")
    assert flag_problems(["--no-enable-prefix-caching"], t33) == [
        "--no-enable-prefix-caching: a hidden spelling of --enable-prefix-caching in vllm 0.33.0"
    ]
    assert flag_problems(["--kv-cache-dtype", "int8_per_token_head"], t19) != []
    assert flag_problems(["--dp-size", "8", "--enable-dp-attention"], sgl) == [
        "--enable-dp-attention: deprecated in sglang 0.5.23"
    ]
    assert flag_problems(["--cuda-graph-max-bs", "256"], sgl) == ["--cuda-graph-max-bs: sglang 0.5.23 has no such flag"]
    dsv3 = dict(model="deepseek-v3", wdtype="fp8", quant="fp8-block", tp=1, dp=8, ep=8, batch=1024, engine="sglang")
    g = flags(launch_command(resolve(Scenario(**dsv3), catalog)).argv)
    assert g["--attn-dp-size"] == "8" and g["--tp-size"] == "8" and "--enable-dp-attention" not in g


def test_flag_problems_reads_types_choices_and_switches(catalog):
    t = load_flag_table("vllm@0.33")
    assert flag_problems(["--max-num-seqs", "many"], t) == ["--max-num-seqs many: not a valid int"]
    assert flag_problems(["--speculative-config", "{bad"], t) == ["--speculative-config {bad: not a valid json"]
    assert flag_problems(["--all2all-backend", "mpi"], t)[0].startswith("--all2all-backend mpi: not one of")
    assert flag_problems(["--quantization", "fbgemm_fp8"], t) == ["--quantization fbgemm_fp8: a deprecated value"]
    assert flag_problems(["--enable-eplb", "yes"], t) == ["--enable-eplb is a switch and takes no value ('yes' given)"]
    assert flag_problems(["--max-model-len"], t) == ["--max-model-len needs a value"]
    assert flag_problems(["--master-addr", "<node-0-address>"], t) == []
    with pytest.raises(ValueError, match="not JSON"):
        parse_flag_table("{")
    with pytest.raises(ValueError, match="flags"):
        parse_flag_table(json.dumps({"engine": "vllm", "version": "1"}))


def test_the_cli_names_the_version_and_checks_the_flags(catalog):
    import io

    from planner.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    assert main(["launch", "spec=1&block=16", "--engine", "sglang"], out=out, err=err) == 0, err.getvalue()
    text = out.getvalue()
    assert "--speculative-ngram-max-bfs-breadth 1" in text
    assert "# flags of SGLang 0.5.23 (checked against its parser's flag table)" in text
    out = io.StringIO()
    assert main(["launch", "engine=vllm@0.19", "--format", "json"], out=out, err=err) == 0
    assert json.loads(out.getvalue())["version"] == "vLLM 0.19.0"
