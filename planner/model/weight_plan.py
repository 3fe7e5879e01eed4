"""The formats a scenario plans with: its checkpoint's, unless the link says otherwise.

Precedence (one rule, used by the engine, the validity checks, the launch command and the page):

  1. ``wdtype`` and/or ``quant`` given: every linear matrix in that scheme (the links' meaning before checkpoints:
     ``wdtype=fp4&quant=mxfp4`` is MXFP4 routed experts with the rest 16 bit, ``wdtype=fp8`` FP8 per tensor;
     ``quant`` alone implies its scheme's weight dtype); no published checkpoint is assumed.
  2. otherwise the preset's checkpoint: ``ckpt=<key>``, or its first (the default: what its publisher ships —
     gpt-oss MXFP4 experts + bf16 attention, DeepSeek-V3/R1 FP8 128 × 128 blocks); a preset that lists none, and a
     custom shape, plan in bf16.
  3. ``quant_attn``, ``quant_mlp``, ``quant_experts`` replace one component's scheme, ``quant_keep`` the matrices left
     in 16 bit (an imported config.json's ``modules_to_not_convert``); a checkpoint so changed is no longer the
     published one (the page says so).
  KV cache: ``kvdtype``, else the checkpoint's (NVIDIA's NVFP4 and FP8 checkpoints ship FP8 KV scales:
  ``kv_cache_quant_algo FP8``), else bf16.  Attention math: ``attn_dtype``, else bf16.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.model.checkpoint_spec import Checkpoint
from planner.model.quantization import COMPONENTS, NONE, SCHEMES, Scheme, WeightFormat, scheme_for
from planner.model.scenario import Scenario
from planner.model.specs import ModelSpec


@dataclass(frozen=True)
class ResolvedWeights:
    """The formats in force (module doc)."""

    fmt: WeightFormat
    wdtype: str  # the weight dtype of the main quantised component ('bf16' when none is): labels, --dtype
    kvdtype: str
    attn_dtype: str
    checkpoint: Checkpoint | None  # the published checkpoint the plan follows (None: the link's own format)
    modified: bool = False  # a component override departs from the checkpoint
    legacy: bool = False  # wdtype / quant set every component (rule 1)
    has_experts: bool = True  # the model has routed experts (labels name their format)

    @property
    def label(self) -> str:
        return self.fmt.label(self.has_experts)

    @property
    def short_label(self) -> str:
        """One word for a table cell: the scheme of a one-format plan ('bf16', 'fp8-block'), the published
        checkpoint's key for a per-component one ('mxfp4'), else 'mixed'."""
        if self.fmt.is_uniform:
            return "bf16" if self.fmt.attention.key == "none" else self.fmt.attention.key
        if self.checkpoint is not None and not self.modified:
            return self.checkpoint.key
        return "mixed"

    def describe(self) -> str:
        """One line for the page and the CLI: the formats and where they come from."""
        where = (
            f"checkpoint {self.checkpoint.repo}" + (" with your component changes" if self.modified else "")
            if self.checkpoint is not None
            else "your link's format"
            if self.legacy
            else "16-bit weights"
        )
        return f"weights {self.label} ({where}) · KV cache {self.kvdtype} · attention math {self.attn_dtype}"


def _scheme(key: str) -> Scheme:
    return NONE if key in ("", "none") else SCHEMES[key]


def checkpoint_format(c: Checkpoint) -> WeightFormat:
    return WeightFormat(
        attention=_scheme(c.attention),
        mlp=_scheme(c.mlp),
        experts=_scheme(c.experts),
        keep_16bit=frozenset(c.keep_16bit),
        group=c.group,
    )


def _legacy(s: Scenario) -> WeightFormat:
    """Rule 1: the link's one scheme for every linear matrix."""
    scheme = scheme_for(s.wdtype, s.quant) if s.wdtype else _scheme(s.quant)
    return WeightFormat.uniform(scheme, s.qgroup)


def _main_wdtype(fmt: WeightFormat, s: Scenario) -> str:
    if s.wdtype:
        return s.wdtype
    for scheme in (fmt.experts, fmt.mlp, fmt.attention):
        if scheme.key != "none":
            return scheme.wdtype
    return "bf16"


def resolve_weights(model: ModelSpec, s: Scenario) -> ResolvedWeights:
    """The formats ``s`` plans ``model`` with (module doc).  An unknown ``ckpt`` falls back to the default here;
    ``weight_problems`` names it (the engine refuses such a scenario before it gets here)."""
    legacy = bool(s.wdtype or s.quant)
    checkpoint = None if legacy else (model.checkpoint(s.ckpt) or model.checkpoint())
    if legacy:
        fmt = _legacy(s)
        # the link's one format may be a published checkpoint's (wdtype=fp4&quant=mxfp4 is gpt-oss's): serve that one
        checkpoint = next((c for c in model.checkpoints if _same(checkpoint_format(c), fmt)), None)
    elif checkpoint is not None:
        fmt = checkpoint_format(checkpoint)
    else:
        fmt = WeightFormat(group=s.qgroup)
    overrides = {c: getattr(s, f"quant_{_SHORT[c]}") for c in COMPONENTS}
    changed = {c: _scheme(v) for c, v in overrides.items() if v}
    modified = False
    if s.quant_keep:
        keep = frozenset(s.quant_keep.split(","))
        modified = checkpoint is not None and keep != fmt.keep_16bit
        fmt = replace(fmt, keep_16bit=keep)
    if changed:
        before = fmt
        group = s.qgroup if any(v.scale in ("group", "group_zero", "w4a8") for v in changed.values()) else fmt.group
        fmt = WeightFormat(
            attention=changed.get("attention", fmt.attention),
            mlp=changed.get("mlp", fmt.mlp),
            experts=changed.get("experts", fmt.experts),
            keep_16bit=fmt.keep_16bit,
            group=group,
        )
        modified = modified or (checkpoint is not None and fmt != before)
    kv = s.kvdtype or (checkpoint.kvdtype if checkpoint is not None and not legacy else "bf16")
    return ResolvedWeights(
        fmt=fmt,
        wdtype=_main_wdtype(fmt, s),
        kvdtype=kv,
        attn_dtype=s.attn_dtype or "bf16",
        checkpoint=checkpoint,
        modified=modified,
        legacy=legacy,
        has_experts=model.is_moe,
    )


_SHORT = {"attention": "attn", "mlp": "mlp", "experts": "experts"}


def _same(a: WeightFormat, b: WeightFormat) -> bool:
    """The same stored format (group size only where a scheme has groups)."""
    return a.schemes == b.schemes and a.keep_16bit == b.keep_16bit and (not a.grouped or a.group == b.group)


def format_labels(model: ModelSpec, s: Scenario) -> tuple[str, str]:
    """(weights, KV cache) of ``s`` as table cells (the search's ``wdtype`` and ``kvdtype`` columns)."""
    w = resolve_weights(model, s)
    return w.short_label, w.kvdtype


def weight_problems(model: ModelSpec, s: Scenario) -> list[str]:
    """One line per format rule the scenario breaks, with the values that pass (the engine-independent ones;
    the GPU × engine rules are ``planner.engine.validity``'s)."""
    out = []
    if s.ckpt and model.checkpoint(s.ckpt) is None:
        keys = ", ".join(c.key for c in model.checkpoints) or "none (it lists no published checkpoint)"
        out.append(f"ckpt={s.ckpt}: {model.name} has no such checkpoint; choose one of {keys}")
    if s.ckpt and (s.wdtype or s.quant):
        out.append(
            f"ckpt={s.ckpt} with wdtype/quant: a checkpoint sets the weights' format itself; drop wdtype and quant "
            "(or ckpt), or change one component with quant_attn / quant_mlp / quant_experts"
        )
    for component, short in _SHORT.items():
        value = getattr(s, f"quant_{short}")
        if value == "mxfp4" and component != "experts":
            out.append(
                f"quant_{short}=mxfp4: MXFP4 stores routed experts only (vLLM's Mxfp4Config quantises FusedMoE "
                "layers); "
                f"for {component} use one of none, fp8, fp8-channel, fp8-block, w8a8, gptq, awq, w4a16, w4a8, nvfp4"
            )
        if value and component == "experts" and not model.is_moe:
            out.append(f"quant_experts={value}: {model.name} has no routed experts; set quant_mlp instead")
    return out
