"""Edge package: turn a Hugging Face ``config.json`` into a :class:`~planner.model.specs.ModelSpec`.

Pure and offline: the caller passes the file's text (``str`` or ``bytes``) or
the already-parsed ``dict``; nothing is fetched, executed or evaluated (the
text goes through :func:`json.loads` only; ``NaN``/``Infinity`` parse as floats and
are refused wherever a shape needs an integer).

Families understood (by ``model_type``, table in ``families``, and by the keys present):

* Llama / Mistral / Qwen2 / Gemma2 and look-alikes (``dense``): MHA, GQA or MQA
  from ``num_key_value_heads`` (absent or null: MHA); ``head_dim`` explicit or
  ``hidden_size // num_attention_heads``.
* Sliding windows (``sliding``): an explicit ``layer_types`` list wins.
  Otherwise Mistral (and any family not listed) puts the window on every layer
  when ``sliding_window`` is set and ``use_sliding_window`` is not false; Qwen2 /
  Qwen3 only when ``use_sliding_window`` is true (default false), on the layers
  at index >= ``max_window_layers`` (default 28); Gemma2 alternates local and
  global layers (half, rounded up); Gemma3 has one global layer per
  ``sliding_window_pattern`` (default 6) (``gemma``).  Llama, OPT, Falcon and
  DeepSeek ignore ``sliding_window``.
* Mixtral (``num_local_experts``): ``intermediate_size`` is per expert.
  Qwen2-MoE / Qwen3-MoE (``num_experts`` + ``moe_intermediate_size``; the
  shared expert's ``shared_expert_intermediate_size`` is counted in units of
  the routed expert's size) and DeepSeek-V2/V3 (``n_routed_experts``,
  ``n_shared_experts``, ``first_k_dense_replace``, ``moe_layer_freq``) (``moe``).
* DeepSeek-V2/V3 MLA (``kv_lora_rank`` > 0; ``q_lora_rank`` may be null).
  ``head_dim`` is set to ``qk_nope_head_dim + qk_rope_head_dim`` (``mla``).
* OPT: ``ffn_dim``, ReLU MLP (not gated), biases (``enable_bias``), tied
  embeddings.  ``word_embed_proj_dim`` different from ``hidden_size`` (only
  OPT-350m) cannot be represented; the embedding is counted at ``hidden_size`` (``opt``).
* Falcon (``falcon``, ``RefinedWeb``, ``RefinedWebModel``): with
  ``new_decoder_architecture`` the KV heads are ``num_kv_heads`` (or
  ``n_head_kv``); otherwise ``multi_query`` (default true) means one KV head.
  MLP is ``ffn_hidden_size`` or 4 x hidden, not gated; context 2048 when the
  config has no ``max_position_embeddings`` (``falcon``).
* GPT-2: ``n_inner`` or 4 x hidden, not gated, Q/K/V biases, tied (``gpt2``).
* gpt-oss (``gpt_oss``): ``layer_types`` alternating sliding/full, attention sinks.
* Llama 4 (``llama4``, ``llama4_text``): chunked local attention on the RoPE layers
  (``attention_chunk_size``, ``no_rope_layers``), routed experts plus one shared
  expert on the MoE layers (``interleave_moe_layer_step``), dense
  ``intermediate_size_mlp`` elsewhere (``llama4``).
* Hybrids whose state layers hold a fixed state per sequence instead of a growing
  KV cache: Qwen3-Next / Qwen3.5 (``qwen3_next``, ``qwen3_5*``: Gated DeltaNet,
  ``full_attention_interval`` or ``layer_types``), Jamba (``jamba``: Mamba-1,
  attention and MoE periods) and Nemotron-H (``nemotron_h``:
  ``hybrid_override_pattern`` or ``layers_block_type``, Mamba-2, latent MoE)
  (``qwen3_next``, ``mamba``, ``state``).
* DeciLM / Nemotron-NAS (``nemotron-nas``): ``block_configs`` with no-op attention
  and per-block FFN widths (``decilm``).
* Gemma 3's config.json leaves out ``vocab_size`` and ``max_position_embeddings``:
  the transformers defaults (262,208; 131,072) apply (``gemma``).

``layer_types`` of any family may name full, sliding, chunked and state layers;
``sliding_window_pattern`` puts the window on all but every pattern-th layer;
per-layer KV-head lists are read when every layer has the same count.  A config
that is not a decoder-only transformer (encoder, encoder-decoder, vision or
speech encoder, diffusers component, pure state-space model) is refused in one
sentence saying what it is (``guards``).

A ``quantization_config`` (GPTQ, AWQ, FP8, compressed-tensors, ModelOpt NVFP4/FP8, MXFP4) gives
the weight dtype and layout (``quantization``; ``model_and_quantization_from_hf_config``).

Aliases: ``num_hidden_layers``/``n_layer``/``num_layers``,
``hidden_size``/``n_embd``, ``num_attention_heads``/``n_head``.  A
multimodal config whose language model sits under ``text_config`` is read
from there (``reader``).  Every problem found is reported at once in one
``ValueError`` that names the config.json field(s); a field that *is* a
ModelSpec field (``num_hidden_layers`` …) is checked against ModelSpec's
bounds as soon as it is read, before anything loops over the layers.
"""

from planner.model.hf_import.importer import model_and_quantization_from_hf_config, model_from_hf_config
from planner.model.hf_import.quantization import WeightQuant, quantization_from_config
from planner.model.hf_import.reader import MAX_CONFIG_BYTES

__all__ = [
    "MAX_CONFIG_BYTES",
    "WeightQuant",
    "model_and_quantization_from_hf_config",
    "model_from_hf_config",
    "quantization_from_config",
]
