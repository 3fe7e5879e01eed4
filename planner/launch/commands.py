"""The command line that deploys a scenario: ``vllm serve`` or SGLang's ``launch_server``.  Pure.

Every flag is the engine version's own (its parser's flag table, ``engine_profiles/<engine>/<version>-flags.json``:
tests/launch/test_flag_tables.py holds every command to it); what changed between releases is the profile's
``[launch]`` section (``planner.model.engine_launch``) and its memory defaults (``planner.engine.defaults``):

  vLLM (``vllm/engine/arg_utils.py``):  --tensor-parallel-size, --max-num-seqs, --max-num-batched-tokens,
    --max-model-len, --gpu-memory-utilization (the scenario's, else the version's default: 0.9 in 0.19, 0.92 in
    0.33), --dtype, --kv-cache-dtype {auto, float16, bfloat16, fp8, … ; int8_per_token_head from 0.20},
    --block-size (0.19: always 16, as planned; 0.33: only a block the user set — vLLM picks its attention
    backend's own), --enable-prefix-caching / --no-enable-prefix-caching (0.33: --disable-prefix-caching),
    --disable-hybrid-kv-cache-manager, --quantization (load-time FP8: fp8; 0.33 fp8_per_tensor),
    --speculative-config '{"method": …, "model": …, "num_speculative_tokens": …}'
  SGLang 0.5.23 (``python -m sglang.launch_server``; srt/server_args.py, srt/arg_groups):  --model-path, --tp-size,
    --mem-fraction-static (the scenario's, else SGLang's own rule by GPU memory), --max-running-requests,
    --chunked-prefill-size, --context-length, --dtype, --kv-cache-dtype {auto, fp8_e4m3, …}, --page-size (only a
    page the user set: SGLang picks 1, or 64 with trtllm_mha), --quantization, --disable-radix-cache,
    --disable-hybrid-swa-memory, --speculative-algorithm {STANDALONE, NGRAM, …}, --speculative-draft-model-path,
    --speculative-num-steps, --speculative-eagle-topk, --speculative-num-draft-tokens, and for NGRAM at a page
    above 1 --speculative-ngram-max-bfs-breadth 1 (its top-k is the BFS breadth, 10, and a top-k above 1 with
    page_size > 1 is refused unless the backend is flashinfer: arg_groups/speculative_hook.py _handle_ngram)

Parallel layouts (docs/model.md "Parallelism"; flags read in vLLM 0.19.0 / 0.33.0 ``engine/arg_utils.py`` and
SGLang 0.5.23 ``srt/arg_groups``):
  vLLM    --pipeline-parallel-size, --data-parallel-size (a dense model's ranks are independent engines),
          --enable-expert-parallel (ep = tp · dp), --enable-eplb, --enable-dbo (two-batch overlap),
          --all2all-backend deepep_low_latency (dp > 1 with ep: the all-to-all the plan prices; vLLM's default
          allgather_reducescatter sends every token to every rank), and across nodes --nnodes, --node-rank,
          --master-addr (the other nodes run the same command with their --node-rank and --headless);
          --max-num-seqs is per data-parallel engine: ⌈batch / dp⌉
  SGLang  --tp-size is the GPUs of a stage (tp · dp: attention-DP lives inside it), --pp-size, --attn-dp-size
          (0.5.23; the deprecated --dp-size N --enable-dp-attention before), --ep-size, --moe-a2a-backend deepep
          (ep = tp_size), --enable-two-batch-overlap, --enable-eplb, across nodes --nnodes, --node-rank,
          --dist-init-addr; --chunked-prefill-size is divided among the dp ranks, so it is chunk · dp

The scenario maps one to one: batch → max_num_seqs, chunk → max_num_batched_tokens, prompt +
output → max_model_len, mem_util → gpu_memory_utilization (SGLang: mem_fraction_static), block →
block size.  What a flag cannot say (a KV dtype the version has no kernel for, a quantised
checkpoint the engine reads its own scheme from) is a note beside the command.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from typing import Any

from planner.engine.defaults import block_in_force, mem_util_in_force, sglang_deepep, sglang_defaults
from planner.engine.evaluate import CUSTOM_MODEL, Resolved
from planner.errors import ProblemsError
from planner.launch.ids import hf_repo_id
from planner.model.catalog import Catalog
from planner.model.engine_launch import EngineLaunch
from planner.model.engine_profile import EngineProfile
from planner.model.spec_methods import HEAD_PLACEHOLDER, HEADS, LABELS, SGLANG_ALGORITHM, VLLM_METHOD
from planner.model.specs import ModelSpec
from planner.model.weight_plan import ResolvedWeights, resolve_weights

ENGINES = ("vllm", "sglang")
#: The placeholder for a custom (imported) shape, whose checkpoint kvplan does not know.
MODEL_PLACEHOLDER = "<your-checkpoint>"
VLLM_DTYPE = {"bf16": "bfloat16", "fp16": "float16"}
VLLM_KV_DTYPE = {
    "fp8": "fp8",
    "fp16": "float16",
    "bf16": "bfloat16",
    "int8_per_token_head": "int8_per_token_head",  # vLLM ≥ 0.23 (planner/model/quant_support.py KV_SINCE)
    "fp8_per_token_head": "fp8_per_token_head",
}
SGLANG_KV_DTYPE = {"fp8": "fp8_e4m3", "bf16": "bf16"}


class LaunchError(ProblemsError):
    """A launch command that cannot be written (an engine kvplan has no writer for)."""


@dataclass(frozen=True)
class LaunchCommand:
    engine: str
    argv: tuple[str, ...]
    notes: tuple[str, ...] = field(default=())
    version: str = ""  # the engine release the flags are spelt for ('vLLM 0.33.0'; '' = not known)
    profile_key: str = ""  # its profile (vllm@0.33): the flag table the command is checked against

    def text(self) -> str:
        """The command as shell text, one flag per line (``\\`` continuations), safely quoted."""
        parts = [shlex.quote(a) for a in self.argv]
        lines, i = [" ".join(parts[: self._head()])], self._head()
        while i < len(parts):
            flag = parts[i]
            if i + 1 < len(parts) and not parts[i + 1].startswith("--"):
                lines.append(f"  {flag} {parts[i + 1]}")
                i += 2
            else:
                lines.append(f"  {flag}")
                i += 1
        return " \\\n".join(lines)

    def _head(self) -> int:
        """Words before the first flag: ``vllm serve MODEL`` or ``python -m sglang.launch_server``."""
        return next((i for i, a in enumerate(self.argv) if a.startswith("--")), len(self.argv))


def _activation_dtype(wdtype: str) -> str:
    """The model dtype ``--kv-cache-dtype auto`` means: a 16-bit checkpoint's own, else bf16."""
    return wdtype if wdtype in VLLM_DTYPE else "bf16"


def model_id(model: ModelSpec, preset: str, weights: ResolvedWeights | None = None) -> tuple[str, list[str]]:
    """The checkpoint to serve: the published checkpoint the plan follows, else the preset's Hugging Face
    repository, else a placeholder and why."""
    if preset != CUSTOM_MODEL and weights is not None and weights.checkpoint is not None:
        return weights.checkpoint.repo, []
    repo = hf_repo_id(model) if preset != CUSTOM_MODEL else None
    if repo:
        return repo, []
    return MODEL_PLACEHOLDER, [
        f"{model.name}: kvplan does not know its checkpoint; put its Hugging Face id or local path "
        f"in place of {MODEL_PLACEHOLDER}"
    ]


def _quantization(r: Resolved, engine: str, w: ResolvedWeights, spell: EngineLaunch) -> tuple[list[str], list[str]]:
    """``--quantization`` for weights quantised at load time (the version's spelling of load-time FP8); a note for a
    pre-quantised checkpoint (the engine reads its ``quantization_config``) or for a plan whose format no published
    checkpoint has."""
    fmt = w.fmt
    if not fmt.quantised:
        return [], []
    if w.checkpoint is not None and not w.modified:
        return [], [
            f"weights: {w.checkpoint.repo} stores them as {w.label}; {engine} reads the scheme from its config.json "
            "(quantization_config), so no --quantization flag is needed"
        ]
    flag = fmt.attention.vllm_flag
    if fmt.is_uniform and flag:
        return ["--quantization", spell.fp8_quantization if flag == "fp8" else flag], []
    group = f", group size {fmt.group}" if fmt.grouped else ""
    return [], [
        f"weights: the plan holds them as {fmt.attention.label if fmt.is_uniform else w.label}{group}; serve a "
        f"checkpoint of {r.model.name} stored so — {engine} "
        "reads the scheme from its config.json (quantization_config), so no --quantization flag is needed"
    ]


def _kv_flag(w: ResolvedWeights, table: dict[str, str], engine: str) -> tuple[list[str], list[str]]:
    """``--kv-cache-dtype`` (auto for the model dtype), or a note when the engine has no such cache."""
    if w.kvdtype == _activation_dtype(w.wdtype):
        return ["--kv-cache-dtype", "auto"], []
    kv = table.get(w.kvdtype)
    if kv is None:
        accepted = ", ".join(["auto", *table.values()])
        return [], [
            f"KV cache: {engine} has no {w.kvdtype} KV cache (--kv-cache-dtype takes {accepted}); plan with "
            "kvdtype=fp8 to launch the same footprint"
        ]
    notes = []
    if w.attn_dtype == "fp8" and engine == "vLLM":
        notes.append(
            "attention in FP8: vLLM's FlashAttention 3 (Hopper) / FlashInfer backend runs attention in the FP8 domain "
            "with an fp8 KV cache (queries quantised too; docs/features/quantization/quantized_kvcache.md)"
        )
    return ["--kv-cache-dtype", kv], notes


def _head(r: Resolved) -> tuple[str, list[str]]:
    """The EAGLE / EAGLE-3 head to launch with: a published one for the preset (``spec_methods.HEADS``), else a
    placeholder and why."""
    s = r.scenario
    found = HEADS.get((s.spec_method, s.model))
    if found is not None:
        return found[0], []
    placeholder = HEAD_PLACEHOLDER.format(method=s.spec_method)
    return placeholder, [
        f"speculation: no published {LABELS[s.spec_method]} for {r.model.name} is known to kvplan; put its Hugging "
        f"Face id in place of {placeholder} (the plan prices a head of the model's own width)"
    ]


def _proposer(r: Resolved) -> tuple[str, dict[str, Any], list[str]]:
    """(method, the extra keys of vLLM's speculative config, notes) of the scenario's speculation."""
    s = r.scenario
    method = s.spec_method or ("draft_model" if r.draft is not None else "")
    if method == "draft_model" and r.draft is not None:
        draft, notes = model_id(r.draft, s.draft, resolve_weights(r.draft, s.model_copy(update={"ckpt": ""})))
        return method, {"model": draft}, notes
    if method in ("eagle", "eagle3"):
        head, notes = _head(r)
        return method, {"model": head}, notes
    if method == "mtp":
        return method, {}, []  # the checkpoint's own layers: no extra model
    if method == "ngram":
        return method, {"prompt_lookup_max": 4}, []
    return (
        "ngram",
        {"prompt_lookup_max": 4},
        [
            f"speculation: the plan prices the draft as a cost ratio ({s.draft_ratio}); n-gram lookup is the engines' "
            "draft-free method (pick spec_method, or a draft preset, to launch what the plan prices)"
        ],
    )


def _speculative_vllm(r: Resolved) -> tuple[list[str], list[str]]:
    """``--speculative-config`` (vLLM's method names, vllm/config/speculative.py; ``spec_methods.VLLM_METHOD``)."""
    s = r.scenario
    if not s.spec:
        return [], []
    method, extra, notes = _proposer(r)
    config = {"method": VLLM_METHOD[method], **extra, "num_speculative_tokens": s.gamma}
    return ["--speculative-config", json.dumps(config, separators=(",", ":"))], notes


def _other_nodes(nodes: int) -> str:
    return "the second node (i = 1)" if nodes == 2 else f"node i = 1 … {nodes - 1}"


def _nodes(r: Resolved) -> int:
    """Nodes (scale-up domains of the GPU profile) one instance spans."""
    s = r.scenario
    return -(-(s.tp * s.dp * s.pp) // r.gpu.gpus_per_node)


def _vllm_layout(r: Resolved) -> tuple[list[str], list[str]]:
    """vLLM's flags for pp, dp, ep and nodes (module doc)."""
    s = r.scenario
    argv: list[str] = []
    notes: list[str] = []
    if s.pp > 1:
        argv += ["--pipeline-parallel-size", str(s.pp)]
    if s.dp > 1:
        argv += ["--data-parallel-size", str(s.dp)]
    if s.ep > 1:
        argv += ["--enable-expert-parallel"] + (["--enable-eplb"] if s.eplb else [])
        if s.redundant_experts:
            argv += ["--eplb-config", json.dumps({"num_redundant_experts": s.redundant_experts})]
        if s.dp > 1:
            argv += ["--all2all-backend", "deepep_low_latency"] + (["--enable-dbo"] if s.tbo else [])
            notes.append(
                "expert parallelism: deepep_low_latency suits decode; a prefill-heavy instance runs "
                "deepep_high_throughput (the plan prices DeepEP's all-to-all for both)"
            )
    nodes = _nodes(r)
    if nodes > 1:
        argv += ["--nnodes", str(nodes), "--node-rank", "0", "--master-addr", "<node-0-address>"]
        notes.append(
            f"{nodes} nodes of {r.gpu.gpus_per_node} GPUs: on {_other_nodes(nodes)} run the same command with "
            f"--node-rank i --headless (or use Ray: --distributed-executor-backend ray)"
        )
    return argv, notes


def _vllm_kv_dtype(r: Resolved, target: EngineProfile, w: ResolvedWeights) -> tuple[list[str], list[str]]:
    """``--kv-cache-dtype`` of the KV dtype in force (``w``): auto for the model's own dtype, fp8, the per-token-head
    caches where the version has them (0.33: int8_per_token_head, also its spelling of an int8 cache; dense models
    only: no MLA backend takes them), else a note."""
    per_token_head = bool(target.launch.int8_kv_cache_dtype)
    kv = "auto" if w.kvdtype == _activation_dtype(w.wdtype) else VLLM_KV_DTYPE.get(w.kvdtype)
    if w.kvdtype.endswith("_per_token_head") and (not per_token_head or r.model.is_mla):
        kv = None
    if w.kvdtype == "int8" and per_token_head and not r.model.is_mla:
        kv = target.launch.int8_kv_cache_dtype
    if kv is not None:
        notes = []
        if w.attn_dtype == "fp8":
            notes.append(
                "attention in FP8: vLLM's FlashAttention 3 (Hopper) / FlashInfer backend runs attention in the FP8 "
                "domain with an fp8 KV cache (queries quantised too; docs/features/quantization/quantized_kvcache.md)"
            )
        return ["--kv-cache-dtype", kv], notes
    mla = r.model.is_mla and per_token_head
    what = f"{w.kvdtype} KV cache" + (
        " for an MLA model (no MLA attention backend takes the per-token-head caches)" if mla else ""
    )
    return [], [
        f"KV cache: {target.label} has no {what} (--kv-cache-dtype takes auto, float16, bfloat16, fp8 …); "
        "plan with kvdtype=fp8 to launch the same footprint"
    ]


def vllm_command(r: Resolved, target: EngineProfile | None = None) -> LaunchCommand:
    """``vllm serve`` for the resolved scenario, spelt for ``target`` (default: the scenario's own profile)."""
    s, m = r.scenario, r.model
    target = target or r.engine
    spell = target.launch
    w = resolve_weights(m, s)
    model, notes = model_id(m, s.model, w)
    argv = ["vllm", "serve", model, "--tensor-parallel-size", str(s.tp)]
    layout_args, layout_notes = _vllm_layout(r)
    argv += layout_args
    notes += layout_notes
    argv += ["--max-num-seqs", str(-(-s.batch // s.dp)), "--max-num-batched-tokens", str(s.chunk)]
    util = mem_util_in_force(target, r.gpu, m, s)
    argv += ["--max-model-len", str(s.prompt + s.output), "--gpu-memory-utilization", repr(util)]
    if w.wdtype in VLLM_DTYPE:
        argv += ["--dtype", VLLM_DTYPE[w.wdtype]]
    kv_args, kv_notes = _vllm_kv_dtype(r, target, w)
    argv += kv_args
    notes += kv_notes
    if s.block is not None or target.memory.block_rule == "fixed":
        argv += ["--block-size", str(block_in_force(target, r.gpu, m, s))]
    argv += ["--enable-prefix-caching" if s.prefix > 0 and s.hit > 0 else spell.prefix_caching_off]
    if not s.hybrid_kv and m.sliding_window_layers:
        argv += ["--disable-hybrid-kv-cache-manager"]
    q_args, q_notes = _quantization(r, "vLLM", w, spell)
    spec_args, spec_notes = _speculative_vllm(r)
    argv, notes = argv + q_args + spec_args, notes + q_notes + spec_notes
    return LaunchCommand("vllm", tuple(argv), tuple(notes), target.label, target.key)


def _speculative_sglang(r: Resolved, page: int) -> tuple[list[str], list[str]]:
    """``--speculative-algorithm`` EAGLE3 / EAGLE (NEXTN, MTP) / STANDALONE / NGRAM and their step flags (SGLang
    docs/advanced_features/speculative_decoding.md; a chain: topk 1, draft tokens = steps + 1).  NGRAM's top-k is
    its BFS breadth (10): at a page above 1 SGLang refuses a top-k above 1 unless the backend is flashinfer, so the
    breadth is set to 1 there (a chain of drafts, as the plan prices them; arg_groups/speculative_hook.py)."""
    s = r.scenario
    if not s.spec:
        return [], []
    method, extra, notes = _proposer(r)
    algorithm = ["--speculative-algorithm", SGLANG_ALGORITHM[method]]
    if method == "ngram":
        return _sglang_ngram(r, algorithm, page, notes)
    steps = ["--speculative-num-steps", str(s.gamma), "--speculative-eagle-topk", "1"]
    steps += ["--speculative-num-draft-tokens", str(s.gamma + 1)]
    path = ["--speculative-draft-model-path", extra["model"]] if "model" in extra else []
    return [*algorithm, *path, *steps], notes


def _sglang_ngram(r: Resolved, algorithm: list[str], page: int, notes: list[str]) -> tuple[list[str], list[str]]:
    s = r.scenario
    if s.dp > 1:
        raise LaunchError(
            [
                f"dp={s.dp}: SGLang's n-gram speculation does not support data-parallel attention "
                "(arg_groups/speculative_hook.py _handle_ngram); use dp=1, a draft model (draft=…) or another "
                "spec_method"
            ]
        )
    argv = [*algorithm, "--speculative-num-draft-tokens", str(s.gamma + 1)]
    if page > 1:
        argv += ["--speculative-ngram-max-bfs-breadth", "1"]
        notes = notes + [
            f"speculation: at page size {page} SGLang takes n-gram drafts only as a chain (BFS breadth 1; a tree of "
            "top-k > 1 needs page size 1 or --attention-backend flashinfer)"
        ]
    return argv, notes


def _sglang_layout(r: Resolved, spell: EngineLaunch) -> tuple[list[str], list[str]]:
    """SGLang's flags for pp, dp attention, ep and nodes (module doc)."""
    s = r.scenario
    argv: list[str] = []
    notes: list[str] = []
    if s.pp > 1:
        argv += ["--pp-size", str(s.pp)]
    if s.dp > 1 and spell.dp_attention == "attn_dp_size":
        argv += ["--attn-dp-size", str(s.dp)]
    elif s.dp > 1:
        argv += ["--dp-size", str(s.dp), "--enable-dp-attention"]
    if s.ep > 1:
        argv += ["--ep-size", str(s.ep)]
        if sglang_deepep(s):
            argv += ["--moe-a2a-backend", "deepep"] + (["--enable-two-batch-overlap"] if s.tbo else [])
        if s.eplb:
            argv += ["--enable-eplb"]
        if s.redundant_experts:
            argv += ["--ep-num-redundant-experts", str(s.redundant_experts)]
    nodes = _nodes(r)
    if nodes > 1:
        argv += ["--nnodes", str(nodes), "--node-rank", "0", "--dist-init-addr", "<node-0-address>:5000"]
        notes.append(f"{nodes} nodes: on {_other_nodes(nodes)} run the same command with --node-rank i")
    return argv, notes


def sglang_command(r: Resolved, target: EngineProfile | None = None) -> LaunchCommand:
    """``python -m sglang.launch_server`` for the resolved scenario, spelt for ``target`` (default: the
    scenario's own profile)."""
    s, m = r.scenario, r.model
    target = target or r.engine
    w = resolve_weights(m, s)
    model, notes = model_id(m, s.model, w)
    argv = ["python", "-m", "sglang.launch_server", "--model-path", model, "--tp-size", str(s.tp * s.dp)]
    layout_args, layout_notes = _sglang_layout(r, target.launch)
    argv += layout_args
    notes += layout_notes
    fraction = mem_util_in_force(target, r.gpu, m, s)
    argv += ["--mem-fraction-static", repr(fraction), "--max-running-requests", str(s.batch)]
    argv += ["--chunked-prefill-size", str(s.chunk * s.dp), "--context-length", str(s.prompt + s.output)]
    if w.wdtype in VLLM_DTYPE:
        argv += ["--dtype", VLLM_DTYPE[w.wdtype]]
    kv_args, kv_notes = _kv_flag(w, SGLANG_KV_DTYPE, "SGLang")
    argv += kv_args
    notes += kv_notes
    if s.block is not None:
        argv += ["--page-size", str(s.block)]
    if s.prefix == 0 or s.hit == 0:
        argv += ["--disable-radix-cache"]
    if not s.hybrid_kv and m.sliding_window_layers:
        argv += ["--disable-hybrid-swa-memory"]
    if r.engine.kind != "sglang":
        notes.append(
            f"memory: the plan is sized by {r.engine.name}'s rules; SGLang's mem_fraction_static counts weights and "
            "the KV pool only (plan with engine=sglang to size for it)"
        )
    notes += _sglang_graph_notes(r, target)
    q_args, q_notes = _quantization(r, "SGLang", w, target.launch)
    spec_args, spec_notes = _speculative_sglang(r, block_in_force(target, r.gpu, m, s))
    argv, notes = argv + q_args + spec_args, notes + q_notes + spec_notes
    return LaunchCommand("sglang", tuple(argv), tuple(notes), target.label, target.key)


def _sglang_graph_notes(r: Resolved, target: EngineProfile) -> list[str]:
    """A batch above the decode CUDA graphs SGLang captures on this GPU runs its decode steps eagerly."""
    rule = target.memory.static_fraction
    if rule is None:
        return []
    d = sglang_defaults(rule, r.gpu, r.model, r.scenario)
    if r.scenario.batch <= d.cuda_graph_max_bs:
        return []
    return [
        f"CUDA graphs: SGLang captures decode batches up to {d.cuda_graph_max_bs} on this GPU "
        f"({d.gpu_memory_mib:,.0f} MiB, memory_hook.py); add --cuda-graph-max-bs-decode {r.scenario.batch} to "
        "capture the planned batch (its graphs take ~2 MiB per batch slot out of the memory outside the static "
        "fraction)"
    ]


def target_profile(r: Resolved, name: str, catalog: Catalog | None) -> EngineProfile:
    """The engine version a command for ``name`` is spelt for: the scenario's own when it is ``name``, else
    the newest ``name`` in ``catalog``."""
    if r.engine.kind == name:
        return r.engine
    found = catalog.engine(name) if catalog is not None else None
    if found is None:
        raise LaunchError([f"--engine {name!r}: no {name} profile to spell the command for (pass the catalog)"])
    return found


def launch_command(r: Resolved, engine: str | None = None, catalog: Catalog | None = None) -> LaunchCommand:
    """The command for ``engine`` (default: the scenario's engine profile, when it has a writer), spelt for the
    scenario's engine version, or for the newest version of another engine in ``catalog``."""
    name = engine or (r.engine.kind if r.engine.kind in ENGINES else "vllm")
    if name not in ENGINES:
        raise LaunchError([f"--engine {name!r}: kvplan writes launch commands for {', '.join(ENGINES)}"])
    target = target_profile(r, name, catalog)
    if name == "sglang":
        return sglang_command(r, target)
    cmd = vllm_command(r, target)
    if r.engine.kind != "vllm":
        note = f"memory: the plan is sized by {r.engine.name}'s rules, not vLLM's (engine=vllm)"
        cmd = LaunchCommand(cmd.engine, cmd.argv, cmd.notes + (note,), cmd.version, cmd.profile_key)
    return cmd
