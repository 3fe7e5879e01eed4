"""Edge module: turn a Hugging Face ``config.json`` into a :class:`ModelSpec`.

Pure and offline: the caller passes the file's text (``str`` or ``bytes``) or
the already-parsed ``dict``; nothing is fetched, executed or evaluated (the
text goes through :func:`json.loads` only, with ``NaN``/``Infinity`` refused).

Families understood (by ``model_type`` and by the keys present):

* Llama / Mistral / Qwen2 / Gemma2 and look-alikes: MHA, GQA or MQA from
  ``num_key_value_heads`` (absent or null: MHA); ``head_dim`` explicit or
  ``hidden_size // num_attention_heads``.
* Sliding windows: an explicit ``layer_types`` list wins.  Otherwise Mistral
  (and any family not listed here) puts the window on every layer when
  ``sliding_window`` is set and ``use_sliding_window`` is not false; Qwen2 /
  Qwen3 only when ``use_sliding_window`` is true (default false), on the layers
  at index >= ``max_window_layers`` (default 28); Gemma2 alternates local and
  global layers (half, rounded up); Gemma3 has one global layer per
  ``sliding_window_pattern`` (default 6).  Llama, OPT, Falcon and DeepSeek
  ignore ``sliding_window``.
* Mixtral (``num_local_experts``): ``intermediate_size`` is per expert.
* Qwen2-MoE / Qwen3-MoE (``num_experts`` + ``moe_intermediate_size``; the
  shared expert's ``shared_expert_intermediate_size`` is counted in units of
  the routed expert's size) and DeepSeek-V2/V3 (``n_routed_experts``,
  ``n_shared_experts``, ``first_k_dense_replace``, ``moe_layer_freq``).
* DeepSeek-V2/V3 MLA (``kv_lora_rank`` > 0; ``q_lora_rank`` may be null).
  ``head_dim`` is set to ``qk_nope_head_dim + qk_rope_head_dim``.
* OPT: ``ffn_dim``, ReLU MLP (not gated), biases (``enable_bias``), tied
  embeddings.  ``word_embed_proj_dim`` different from ``hidden_size`` (only
  OPT-350m) cannot be represented; the embedding is counted at ``hidden_size``.
* Falcon (``falcon``, ``RefinedWeb``, ``RefinedWebModel``): with
  ``new_decoder_architecture`` the KV heads are ``num_kv_heads`` (or
  ``n_head_kv``); otherwise ``multi_query`` (default true) means one KV head.
  MLP is ``ffn_hidden_size`` or 4 x hidden, not gated; context 2048 when the
  config has no ``max_position_embeddings``.

Aliases: ``num_hidden_layers``/``n_layer``/``num_layers``,
``hidden_size``/``n_embd``, ``num_attention_heads``/``n_head``.  A
multimodal config whose language model sits under ``text_config`` is read
from there.  Every problem found is reported at once in one ``ValueError``
that names the config.json field(s).
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import ValidationError

from planner.model.specs import ModelSpec

#: Largest config.json text accepted (real ones are 1–5 KB).
MAX_CONFIG_BYTES = 1_000_000

_LAYERS = ("num_hidden_layers", "n_layer", "num_layers")
_HIDDEN = ("hidden_size", "n_embd")
_HEADS = ("num_attention_heads", "n_head")
_CONTEXT = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")

_FALCON_TYPES = {"falcon", "refinedweb", "refinedwebmodel"}
_OPT_TYPES = {"opt"}
_DEEPSEEK_TYPES = {"deepseek_v2", "deepseek_v3", "deepseek_v32"}
_QWEN_TYPES = {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}
_GEMMA2_TYPES = {"gemma2"}
_GEMMA3_TYPES = {"gemma3", "gemma3_text"}
#: Families whose config may carry a ``sliding_window`` that their attention ignores.
_NO_SLIDING_TYPES = {"llama"} | _OPT_TYPES | _FALCON_TYPES | _DEEPSEEK_TYPES
#: Families whose ``tie_word_embeddings`` defaults to true when absent.
_TIED_BY_DEFAULT = _FALCON_TYPES | _OPT_TYPES | {"gemma"} | _GEMMA2_TYPES | _GEMMA3_TYPES | {"gpt2"}
#: Families whose Q/K/V projections always carry a bias.
_QKV_BIAS_ALWAYS = {"qwen2", "qwen2_moe", "gpt2"}


def _fields(keys: tuple[str, ...]) -> str:
    """``'a' (or 'b', 'c')`` for messages."""
    head = f"'{keys[0]}'"
    if len(keys) == 1:
        return head
    return head + " (or " + ", ".join(f"'{k}'" for k in keys[1:]) + ")"


def _describe(value: Any) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    return repr(value)


class _Reader:
    """Reads typed fields from the config dict, collecting every problem."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.problems: list[str] = []
        #: ModelSpec field -> config.json key it came from (for error messages).
        self.origin: dict[str, str] = {}

    def _find(self, keys: tuple[str, ...]) -> tuple[str | None, Any]:
        for k in keys:
            v = self.cfg.get(k)
            if v is not None:
                return k, v
        return None, None

    def integer(
        self,
        keys: tuple[str, ...] | str,
        *,
        required: bool = False,
        default: int | None = None,
        minimum: int = 1,
        spec_field: str | None = None,
    ) -> int | None:
        if isinstance(keys, str):
            keys = (keys,)
        key, value = self._find(keys)
        if key is None:
            if required:
                self.problems.append(f"config.json is missing required field {_fields(keys)}")
            return default
        if spec_field:
            self.origin[spec_field] = key
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problems.append(f"config.json field '{key}' must be an integer, got {_describe(value)}")
            return default
        if isinstance(value, float):
            if not (math.isfinite(value) and value.is_integer()):
                self.problems.append(f"config.json field '{key}' must be an integer, got {value!r}")
                return default
            value = int(value)
        if value < minimum:
            self.problems.append(f"config.json field '{key}' must be an integer >= {minimum}, got {value}")
            return default
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.append(f"config.json field '{key}' must be true or false, got {_describe(value)}")
            return default
        return value

    def text(self, key: str) -> str | None:
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.problems.append(f"config.json field '{key}' must be a string, got {_describe(value)}")
            return None
        return value


def _parse(config: str | bytes | bytearray | dict) -> dict[str, Any]:
    if isinstance(config, dict):
        return config
    if isinstance(config, str):
        # Characters <= UTF-8 bytes, so the cheap length check is safe to do first.
        if len(config) > MAX_CONFIG_BYTES or len(config.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
            raise ValueError(
                f"config.json is too large: more than {MAX_CONFIG_BYTES} bytes (limit {MAX_CONFIG_BYTES} bytes, 1 MB)"
            )
        text = config
    elif isinstance(config, (bytes, bytearray)):
        if len(config) > MAX_CONFIG_BYTES:
            raise ValueError(f"config.json is too large: {len(config)} bytes (limit {MAX_CONFIG_BYTES} bytes, 1 MB)")
        try:
            text = bytes(config).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ValueError(f"config.json is not valid JSON: not UTF-8 text ({exc})") from None
    else:
        raise TypeError(
            f"config must be the config.json text (str or bytes) or a parsed dict, not {type(config).__name__}"
        )

    def _no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(text.lstrip("\ufeff"), parse_constant=_no_constants)
    except RecursionError:
        raise ValueError("config.json is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, NaN/Infinity, over-long integers
        raise ValueError(f"config.json is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config.json must be a JSON object {{...}}, got {type(data).__name__}")
    return data


def _language_model_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a multimodal config (``text_config``), else ``data``."""
    text = data.get("text_config")
    if isinstance(text, dict) and not any(data.get(k) is not None for k in _LAYERS):
        merged = {k: v for k, v in data.items() if k != "text_config"}
        merged.update(text)
        return merged
    return data


def _default_name(r: _Reader, model_type: str) -> str:
    path = r.cfg.get("_name_or_path")
    if isinstance(path, str) and path.strip():
        return path.strip()
    arch = r.cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str) and arch[0].strip():
        return arch[0].strip()
    return model_type or "imported-model"


def _sliding(r: _Reader, model_type: str, layers: int) -> tuple[int, int]:
    """(window tokens, layers that use it)."""
    layer_types = r.cfg.get("layer_types")
    window = r.integer(("sliding_window", "sliding_window_size"), minimum=0, spec_field="sliding_window_tokens") or 0
    if layer_types is not None:
        if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
            r.problems.append("config.json field 'layer_types' must be a list of strings")
            return 0, 0
        n = sum(1 for t in layer_types if t == "sliding_attention")
        if n and not window:
            r.problems.append(
                "config.json field 'layer_types' lists sliding_attention layers but 'sliding_window' is missing"
            )
            return 0, 0
        if len(layer_types) != layers:
            r.problems.append(f"config.json field 'layer_types' has {len(layer_types)} entries for {layers} layers")
            return 0, 0
        return (window, n) if n else (0, 0)

    if model_type in _NO_SLIDING_TYPES or not window:
        return 0, 0
    if model_type in _GEMMA2_TYPES:
        return window, (layers + 1) // 2  # even-indexed layers are local
    if model_type in _GEMMA3_TYPES:
        pattern = r.integer("sliding_window_pattern", default=6) or 6
        return window, layers - layers // pattern
    if model_type in _QWEN_TYPES:
        if not r.flag("use_sliding_window", False):
            return 0, 0
        first = r.integer("max_window_layers", default=28, minimum=0)
        n = max(0, min(layers, layers - (first if first is not None else 28)))
        return (window, n) if n else (0, 0)
    # Mistral, Mixtral and anything else: every layer, unless switched off.
    if not r.flag("use_sliding_window", True):
        return 0, 0
    return window, layers


def model_from_hf_config(config: str | bytes | dict, name: str | None = None) -> ModelSpec:
    """Map a Hugging Face ``config.json`` (text or parsed dict) to a :class:`ModelSpec`.

    Raises ``ValueError`` naming the offending config.json field(s) for a missing
    or mistyped field, invalid JSON, or text over :data:`MAX_CONFIG_BYTES`.
    """
    r = _Reader(_language_model_config(_parse(config)))
    model_type = (r.text("model_type") or "").lower()
    is_falcon = model_type in _FALCON_TYPES
    is_opt = model_type in _OPT_TYPES

    layers = r.integer(_LAYERS, required=True, spec_field="layers")
    hidden = r.integer(_HIDDEN, required=True, spec_field="hidden")
    heads = r.integer(_HEADS, required=True, spec_field="heads")
    vocab = r.integer("vocab_size", required=True, spec_field="vocab")
    context = r.integer(
        _CONTEXT, required=not is_falcon, default=2048 if is_falcon else None, spec_field="context_window_tokens"
    )

    # --- attention -----------------------------------------------------------
    kv_lora_rank = r.integer("kv_lora_rank", minimum=0, default=0, spec_field="kv_lora_rank") or 0
    mla = dict(q_lora_rank=0, qk_rope_head_dim=0, qk_nope_head_dim=0, v_head_dim=0)
    if kv_lora_rank:
        mla["q_lora_rank"] = r.integer("q_lora_rank", minimum=0, default=0, spec_field="q_lora_rank") or 0
        for f in ("qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            mla[f] = r.integer(f, required=True, spec_field=f) or 0
        head_dim = (mla["qk_nope_head_dim"] + mla["qk_rope_head_dim"]) or None
        kv_heads = heads  # MLA: every head reads the shared latent
    else:
        head_dim = r.integer("head_dim", spec_field="head_dim")
        if is_falcon:
            new_arch = r.flag("new_decoder_architecture", model_type == "refinedweb")
            multi_query = r.flag("multi_query", True)
            if new_arch:
                kv_heads = r.integer(("num_kv_heads", "n_head_kv"), default=heads, spec_field="kv_heads")
            else:
                kv_heads = 1 if multi_query else heads
        else:
            kv_heads = r.integer(
                ("num_key_value_heads", "num_kv_heads", "n_head_kv"), default=heads, spec_field="kv_heads"
            )
        if head_dim is None and hidden and heads:
            if hidden % heads:
                r.problems.append(
                    f"config.json field '{r.origin.get('hidden', 'hidden_size')}' ({hidden}) is not divisible by "
                    f"'{r.origin.get('heads', 'num_attention_heads')}' ({heads}); give 'head_dim'"
                )
            else:
                head_dim = hidden // heads

    # --- MLP -----------------------------------------------------------------
    gated = not (is_falcon or is_opt or model_type == "gpt2")
    moe: dict[str, int] = dict(experts=0, experts_per_token=0, shared_experts=0, moe_ffn=0, dense_layers=0)
    if is_opt:
        ffn = r.integer("ffn_dim", required=True, spec_field="ffn")
        r.integer("word_embed_proj_dim")  # type-checked only; see module docstring
        r.flag("do_layer_norm_before", True)
    elif is_falcon:
        ffn = r.integer("ffn_hidden_size", spec_field="ffn") or (4 * hidden if hidden else None)
    elif r.cfg.get("num_local_experts") is not None:  # Mixtral
        ffn = r.integer("intermediate_size", required=True, spec_field="ffn")
        moe["experts"] = r.integer("num_local_experts", spec_field="experts") or 0
        moe["experts_per_token"] = r.integer("num_experts_per_tok", default=2, spec_field="experts_per_token") or 0
        moe["moe_ffn"] = ffn or 0
    elif r.cfg.get("n_routed_experts") is not None:  # DeepSeek-V2/V3
        ffn = r.integer("intermediate_size", required=True, spec_field="ffn")
        moe["experts"] = r.integer("n_routed_experts", spec_field="experts") or 0
        moe["experts_per_token"] = r.integer("num_experts_per_tok", required=True, spec_field="experts_per_token") or 0
        moe["shared_experts"] = r.integer("n_shared_experts", minimum=0, default=0, spec_field="shared_experts") or 0
        moe["moe_ffn"] = r.integer("moe_intermediate_size", required=True, spec_field="moe_ffn") or 0
        first_dense = r.integer("first_k_dense_replace", minimum=0, default=0, spec_field="dense_layers") or 0
        freq = r.integer("moe_layer_freq", default=1) or 1
        if layers:
            n_moe = sum(1 for i in range(layers) if i >= first_dense and i % freq == 0)
            moe["dense_layers"] = layers - n_moe
    elif r.cfg.get("num_experts") is not None and r.cfg.get("moe_intermediate_size") is not None:
        ffn = r.integer("intermediate_size", required=True, spec_field="ffn")  # Qwen2-MoE / Qwen3-MoE
        moe["experts"] = r.integer("num_experts", spec_field="experts") or 0
        moe["experts_per_token"] = r.integer("num_experts_per_tok", required=True, spec_field="experts_per_token") or 0
        moe["moe_ffn"] = r.integer("moe_intermediate_size", spec_field="moe_ffn") or 0
        shared = r.integer("shared_expert_intermediate_size", minimum=0, default=0) or 0
        if shared and moe["moe_ffn"]:
            moe["shared_experts"] = math.ceil(shared / moe["moe_ffn"])
        step = r.integer("decoder_sparse_step", default=1) or 1
        only_mlp = r.cfg.get("mlp_only_layers") or []
        if not isinstance(only_mlp, list) or not all(isinstance(i, int) and not isinstance(i, bool) for i in only_mlp):
            r.problems.append("config.json field 'mlp_only_layers' must be a list of layer indices")
            only_mlp = []
        if layers:
            n_moe = sum(1 for i in range(layers) if i not in only_mlp and (i + 1) % step == 0)
            moe["dense_layers"] = layers - n_moe
    else:
        ffn = r.integer(("intermediate_size", "n_inner", "ffn_dim"), required=model_type != "gpt2", spec_field="ffn")
        if ffn is None and model_type == "gpt2" and hidden:
            ffn = 4 * hidden
    if moe["experts"] == 0:
        moe = dict(experts=0, experts_per_token=0, shared_experts=0, moe_ffn=0, dense_layers=0)

    # --- flags ---------------------------------------------------------------
    tied = r.flag("tie_word_embeddings", model_type in _TIED_BY_DEFAULT)
    if is_opt:
        qkv_bias = r.flag("enable_bias", True)
    elif is_falcon:
        qkv_bias = r.flag("bias", False)
    elif model_type in _QKV_BIAS_ALWAYS:
        qkv_bias = True
    else:
        qkv_bias = r.flag("attention_bias", False)

    window, window_layers = _sliding(r, model_type, layers) if layers else (0, 0)

    if name is not None and not isinstance(name, str):
        raise TypeError(f"name must be a string, not {type(name).__name__}")
    label = (name if name and name.strip() else _default_name(r, model_type)).strip()[:120]

    if r.problems:
        raise ValueError("; ".join(r.problems))

    try:
        return ModelSpec(
            name=label,
            layers=layers,
            hidden=hidden,
            heads=heads,
            kv_heads=kv_heads,
            head_dim=head_dim,
            ffn=ffn,
            vocab=vocab,
            tied_embeddings=tied,
            gated_mlp=gated,
            qkv_bias=qkv_bias,
            **moe,
            kv_lora_rank=kv_lora_rank,
            **mla,
            sliding_window_tokens=window if window_layers else 0,
            sliding_window_layers=window_layers,
            context_window_tokens=context,
            source="Hugging Face config.json",
        )
    except ValidationError as exc:
        parts = []
        for e in exc.errors():
            field = ".".join(str(x) for x in e["loc"])
            key = r.origin.get(field)
            where = f"'{key}' ({field})" if key else (field or "(model)")
            parts.append(f"{where}: {e['msg']}")
        raise ValueError("config.json describes a model outside the planner's bounds: " + "; ".join(parts)) from None
