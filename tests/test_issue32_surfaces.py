"""Issue 32's features on every surface but the page (tests/ui/test_issue32_page.py has the page): the published
checkpoint and the per-component formats, the speculation methods, power and energy, and the GB300 / RTX PRO 6000
Server Edition profiles — each through the CLI's text, JSON and CSV (``kvplan evaluate``), the sweep's CSV and the
launch commands (``kvplan launch``), against the planner's own figures for the same scenario."""

from __future__ import annotations

import csv
import io
import json

import pytest

from planner.cli.main import main
from planner.engine.evaluate import evaluate
from planner.links import from_query
from planner.model.scenario import Scenario
from planner.search.power_limit import OVER_POWER, POWER_UNKNOWN
from planner.units import GiB


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def as_json(link: str) -> dict:
    code, out, err = run("evaluate", link, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def as_csv(link: str) -> dict[str, str]:
    code, out, err = run("evaluate", link, "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 1
    return rows[0]


def as_text(link: str) -> str:
    code, out, err = run("evaluate", link)
    assert code == 0, err
    return out


def scenario(link: str) -> Scenario:
    s, issues = from_query(link)
    assert not issues, issues
    return s


def launch(link: str, engine: str = "vllm") -> dict:
    code, out, err = run("launch", link, "--engine", engine, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


# --- the published checkpoint and the per-component formats ----------------------------------------------------

NVFP4_R1 = "model=deepseek-r1&ckpt=nvfp4&gpu=b200&tp=8"


def test_ckpt_reaches_the_cli_json_and_csv(catalog):
    """ckpt=nvfp4 on DeepSeek-R1: NVIDIA's NVFP4 checkpoint (MLA q/kv projections kept in bf16), its weights smaller
    than the default FP8-block checkpoint's; every output carries the key, the repository and the bytes."""
    row, cells = as_json(NVFP4_R1), as_csv(NVFP4_R1)
    want = evaluate(scenario(NVFP4_R1), catalog).metrics["weight_bytes_per_gpu"]
    default = evaluate(scenario("model=deepseek-r1&gpu=b200&tp=8"), catalog).metrics["weight_bytes_per_gpu"]
    assert want < 0.6 * default
    for out in (row, cells):
        assert out["ckpt"] == "nvfp4"
        assert float(out["weight_bytes_per_gpu"]) == pytest.approx(float(want))
        assert "(checkpoint nvidia/DeepSeek-R1-0528-FP4-v2)" in out["weight_formats"]
        assert "16-bit: kv_a_proj_with_mqa, kv_b_proj, q_a_proj, q_b_proj" in out["weight_formats"]
    assert "(checkpoint deepseek-ai/DeepSeek-R1)" in as_json("model=deepseek-r1&gpu=b200&tp=8")["weight_formats"]
    text = as_text(NVFP4_R1)
    assert text.splitlines()[0].startswith("DeepSeek-R1 on 8 × NVIDIA B200 · weights attention nvfp4")
    assert "inputs: gpu=b200, tp=8, model=deepseek-r1, ckpt=nvfp4" in text


@pytest.mark.parametrize(
    ("link", "words"),
    [
        ("model=llama-3.3-70b&gpu=gb300&quant_mlp=nvfp4", "MLP nvfp4"),
        ("model=qwen3-235b-a22b&ckpt=fp8&gpu=h200&tp=4&quant_attn=none", "attention bf16"),
        ("model=qwen3-30b-a3b&gpu=b200&quant_experts=nvfp4", "experts nvfp4"),
        ("model=deepseek-r1&ckpt=nvfp4&gpu=b200&tp=8&quant_keep=q_a_proj", "16-bit: q_a_proj)"),
    ],
)
def test_one_component_changed_reaches_every_export(catalog, link, words):
    """quant_attn / quant_mlp / quant_experts / quant_keep: the key in the JSON and CSV inputs, the formats column
    naming the component and 'with your component changes', the bytes the planner computes."""
    row, cells = as_json(link), as_csv(link)
    key, value = link.rsplit("&", 1)[1].split("=")
    want = evaluate(scenario(link), catalog).metrics["weight_bytes_per_gpu"]
    for out in (row, cells):
        assert out[key] == value
        assert words in out["weight_formats"] and "with your component changes" in out["weight_formats"]
        assert float(out["weight_bytes_per_gpu"]) == pytest.approx(float(want))
    assert words in as_text(link).splitlines()[0]


@pytest.mark.parametrize(
    ("kv", "vllm_flag"),
    [("int8_per_token_head", "int8_per_token_head"), ("fp8", "fp8"), ("fp8_per_token_head", "fp8_per_token_head")],
)
def test_kv_formats_reach_the_exports_and_the_vllm_command(catalog, kv, vllm_flag):
    """vLLM 0.33 ``--kv-cache-dtype`` takes int8_per_token_head and fp8_per_token_head (an fp32 scale per token and
    head inline); the per-token KV bytes in the JSON are the planner's."""
    link = f"model=llama-3.1-8b&kvdtype={kv}"
    row = as_json(link)
    assert row["kvdtype"] == kv and f"KV cache {kv}" in row["weight_formats"]
    assert row["kv_bytes_per_token"] == evaluate(scenario(link), catalog).metrics["kv_bytes_per_token"]
    bf16 = as_json("model=llama-3.1-8b")["kv_bytes_per_token"]
    assert row["kv_bytes_per_token"] < bf16
    assert flag(launch(link)["argv"], "--kv-cache-dtype") == vllm_flag


def test_fp8_attention_math_reaches_the_exports_and_the_launch():
    link = "model=llama-3.1-8b&gpu=h100-sxm&kvdtype=fp8&attn_dtype=fp8"
    row = as_json(link)
    assert row["attn_dtype"] == "fp8" and row["weight_formats"].endswith("attention math fp8")
    assert flag(launch(link)["argv"], "--kv-cache-dtype") == "fp8"


def test_the_launch_serves_the_checkpoint_the_export_names():
    """The repository in the formats column is the one ``vllm serve`` / SGLang's --model-path loads."""
    repo = "nvidia/DeepSeek-R1-0528-FP4-v2"
    assert repo in as_json(NVFP4_R1)["weight_formats"]
    assert launch(NVFP4_R1)["argv"][2] == repo
    sg = launch(NVFP4_R1, "sglang")["argv"]
    assert flag(sg, "--model-path") == repo


def test_a_refused_format_exits_2_naming_what_passes():
    code, out, err = run("evaluate", "model=deepseek-r1&ckpt=nvfp4&gpu=mi300x&tp=8")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "nvfp4 runs on: Ampere" in err
    code, _, err = run("evaluate", "model=gpt-oss-20b&ckpt=fp8")
    assert code == 2 and "choose one of mxfp4" in err


def test_the_sweep_csv_has_the_formats_of_each_row():
    """A sweep over kvdtype: each row's formats column names its KV cache."""
    code, out, err = run("sweep", "model=llama-3.1-8b", "--set", "kvdtype=bf16,fp8,int8_per_token_head")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["kvdtype"] for r in rows] == ["bf16", "fp8", "int8_per_token_head"]
    assert [r["weight_formats"].split(" · KV cache ")[1].split(" ·")[0] for r in rows] == [r["kvdtype"] for r in rows]


# --- speculation methods ---------------------------------------------------------------------------------------

SPEC_LINKS = {
    "eagle3": ("model=llama-3.1-8b&spec_method=eagle3&gamma=3", "eagle3", "EAGLE3", "EAGLE-3 head"),
    "eagle": ("model=llama-3.1-8b&spec_method=eagle&gamma=3", "eagle", "EAGLE", "EAGLE head"),
    "ngram": ("model=llama-3.1-8b&spec_method=ngram&gamma=4", "ngram", "NGRAM", "n-gram prompt lookup"),
    "mtp": ("model=deepseek-r1&gpu=h200&tp=8&spec_method=mtp&gamma=1", "mtp", "EAGLE", "the model's MTP layers"),
    "draft_model": (
        "model=llama-3.1-70b&gpu=h200&tp=4&spec=1&draft=llama-3.2-1b&gamma=3",
        "draft_model",
        "STANDALONE",
        "draft model llama-3.2-1b",
    ),
}


@pytest.mark.parametrize("method", sorted(SPEC_LINKS))
def test_each_speculation_method_on_the_cli_exports_and_launch(catalog, method):
    """The method's key, speedup and draft memory in JSON and CSV (the planner's figures), its name in the text, and
    the engines' flags: vLLM's --speculative-config method (vllm/config/speculative.py) and SGLang's
    --speculative-algorithm (NEXTN/MTP run as EAGLE; a draft model as STANDALONE)."""
    link, vllm_method, sglang_algorithm, label = SPEC_LINKS[method]
    m = evaluate(scenario(link), catalog).metrics
    row, cells = as_json(link), as_csv(link)
    for out in (row, cells):
        assert out["spec"] == "true" and out["spec_method"] == ("" if method == "draft_model" else method)
        assert float(out["spec_speedup"]) == pytest.approx(float(m["spec_speedup"]))
        assert float(out["draft_weight_bytes_per_gpu"]) == pytest.approx(float(m["draft_weight_bytes_per_gpu"]))
    assert f"Speculative decoding · {label}" in as_text(link)
    config = json.loads(flag(launch(link)["argv"], "--speculative-config"))
    assert config["method"] == vllm_method and config["num_speculative_tokens"] == scenario(link).gamma
    sg = launch(link, "sglang")["argv"]
    assert flag(sg, "--speculative-algorithm") == sglang_algorithm


def test_methods_differ_in_their_exported_memory():
    """An n-gram proposer holds no weights; EAGLE-3 a head; a draft model its own weights; MTP the checkpoint's own
    next-token layers."""
    draft = {k: float(as_json(v[0])["draft_weight_bytes_per_gpu"]) for k, v in SPEC_LINKS.items()}
    assert draft["ngram"] == 0.0
    assert min(draft["eagle"], draft["eagle3"], draft["mtp"]) > 0.0 and max(draft["eagle"], draft["eagle3"]) < GiB
    # Llama-3.2-1B (1.24B parameters, bf16) split over the target's tp 4
    assert draft["draft_model"] * 4 == pytest.approx(1.24e9 * 2, rel=0.05)


# --- power and energy ------------------------------------------------------------------------------------------

POWER = "model=llama-3.1-8b&gpu=h100-sxm&power_limit_kw=20&pue=1.3&electricity_usd_per_kwh=0.12&gpu_power_w=600"
POWER_METRICS = (
    "power_per_gpu_w",
    "prefill_power_per_gpu_w",
    "decode_power_per_gpu_w",
    "replica_power_kw",
    "replica_site_power_kw",
    "energy_per_output_token_j",
    "kwh_per_million_output_tokens",
    "energy_cost_per_million_output_tokens_usd",
    "replicas_within_power_limit",
)


def test_power_inputs_and_metrics_reach_the_json_and_csv(catalog):
    m = evaluate(scenario(POWER), catalog).metrics
    row, cells = as_json(POWER), as_csv(POWER)
    for out in (row, cells):
        assert (float(out["power_limit_kw"]), float(out["pue"]), float(out["gpu_power_w"])) == (20.0, 1.3, 600.0)
        for k in POWER_METRICS:
            assert float(out[k]) == pytest.approx(float(m[k]), rel=1e-9), k
    assert float(row["power_per_gpu_w"]) <= 600.0  # the cap holds
    assert float(row["replica_site_power_kw"]) == pytest.approx(1.3 * float(row["replica_power_kw"]))


def test_power_in_the_text_output(catalog):
    m = evaluate(scenario(POWER), catalog).metrics
    text = as_text(POWER)
    section = text.split("\nPower and energy\n")[1].split("\n\n")[0]
    assert f"{round(float(m['power_per_gpu_w']))} W" in section
    assert "at $0.120/kWh" in section and "replicas within power_limit_kw = 20" in section
    assert "site at PUE 1.3" in section


def test_a_gpu_without_published_power_says_so_in_every_export():
    row = as_json("model=llama-3.1-8b&gpu=a10g")
    assert row["power_per_gpu_w"] == "n/a" and row["energy_cost_per_million_output_tokens_usd"] == "n/a"
    assert "n/a (no published board power: give gpu_power_w)" in as_text("model=llama-3.1-8b&gpu=a10g")


def test_the_search_csv_holds_the_power_limit():
    """``kvplan pareto`` (the sizing search's scored points): with power_limit_kw every point that meets the SLO
    stays within the limit; the ones over it say so."""
    code, out, err = run("pareto", "model=llama-3.1-8b&rate=20&power_limit_kw=3", "--format", "csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    meets = [r for r in rows if r["meets_slo"] == "true"]
    assert meets and all(float(r["fleet_power_kw"]) <= 3.0 for r in meets)
    over = [r for r in rows if r["status"] == OVER_POWER]
    assert over and all(float(r["fleet_power_kw"]) > 3.0 for r in over)
    # a GPU without a published board power is not said to exceed the limit: its power is unknown
    unknown = [r for r in rows if r["status"] == POWER_UNKNOWN]
    assert (
        unknown
        and {r["gpu"] for r in unknown} <= {"a10g", "h800"}
        and {r["fleet_power_kw"] for r in unknown} == {"n/a"}
    )
    free = list(csv.DictReader(io.StringIO(run("pareto", "model=llama-3.1-8b&rate=20", "--format", "csv")[1])))
    assert sum(r["meets_slo"] == "true" for r in free) > len(meets)


# --- GB300 and the RTX PRO 6000 Server Edition -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpu", "name"),
    [
        ("gb300", "NVIDIA GB300 (NVL72, per GPU)"),
        ("rtx-pro-6000-blackwell-server", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
    ],
)
def test_new_gpus_evaluate_export_list_and_launch(catalog, gpu, name):
    link = f"model=llama-3.3-70b&ckpt=nvfp4&gpu={gpu}"
    row, cells = as_json(link), as_csv(link)
    m = evaluate(scenario(link), catalog).metrics
    for out in (row, cells):
        # a GB300's tables are bounded by the GB200's: ', bounded by gb200)' (docs/kernel_tables.md "Kernel ceilings")
        assert out["gpu"] == gpu and out["time_basis"].startswith(f"measured kernels (vLLM 0.24.0, {name}")
        assert float(out["tpot_s"]) == pytest.approx(float(m["tpot_s"]))
        assert float(out["power_per_gpu_w"]) == pytest.approx(float(m["power_per_gpu_w"]))
    assert as_text(link).splitlines()[0].startswith(f"Llama-3.3-70B on 1 × {name} · ")
    code, out, _ = run("gpus")
    assert code == 0 and any(line.split()[:1] == [gpu] for line in out.splitlines())
    assert launch(link)["argv"][:2] == ["vllm", "serve"]
