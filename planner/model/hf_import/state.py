"""What a state layer keeps per sequence, in the dtypes vLLM stores it in.

A linear-attention or state-space layer keeps a convolution window and a recurrent
state per sequence, of a size fixed by its shape (not by the sequence length).  The
shapes are vLLM's ``MambaStateShapeCalculator`` (vllm/model_executor/layers/mamba/
mamba_utils.py; before tensor-parallel division):

  Mamba-1         conv (d_conv − 1) × I                 ssm I × d_state                 (I = expand · d)
  Mamba-2         conv (d_conv − 1) × (I + 2·n_g·d_state)   ssm n_heads × head_dim × d_state   (I = n_heads · head_dim)
  Gated DeltaNet  conv (k − 1) × (2·n_k·h_k + n_v·h_v)      ssm n_v × h_v × h_k

Dtypes (``MambaStateDtypeCalculator``, ``--mamba-cache-dtype auto``): the convolution
state in the model dtype; the recurrent state in the model dtype too, unless the config
asks for another (``mamba_ssm_cache_dtype`` / ``mamba_ssm_dtype``).  NemotronH models
default the recurrent state to float32 (vLLM's ``NemotronHForCausalLMConfig``
verify hook: "only float32 is known to have no accuracy issues").
"""

from __future__ import annotations

from planner.model.hf_import.reader import ConfigReader

#: Bytes per element of the dtype names a config.json uses.
DTYPE_NAME_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}
DTYPE_KEYS = ("torch_dtype", "dtype")
SSM_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype")
#: Bytes of the model dtype when the config names none (bf16 checkpoints).
DEFAULT_MODEL_DTYPE_BYTES = 2


def _dtype_bytes(reader: ConfigReader, keys: tuple[str, ...], default: int) -> int:
    """Bytes per element of the first of ``keys`` present (a dtype name), else ``default``."""
    for key in keys:
        value = reader.cfg.get(key)
        if value is None:
            continue
        if not isinstance(value, str) or value.removeprefix("torch.") not in DTYPE_NAME_BYTES:
            reader.problems.append(
                f"config.json field '{key}' must name a dtype ({', '.join(DTYPE_NAME_BYTES)}), got {value!r:.40}"
            )
            return default
        return DTYPE_NAME_BYTES[value.removeprefix("torch.")]
    return default


def model_dtype_bytes(reader: ConfigReader) -> int:
    """Bytes per element of the model dtype (``torch_dtype``; bf16 when absent)."""
    return _dtype_bytes(reader, DTYPE_KEYS, DEFAULT_MODEL_DTYPE_BYTES)


def ssm_dtype_bytes(reader: ConfigReader, default: int) -> int:
    """Bytes per element of the recurrent state: the config's ``mamba_ssm_cache_dtype``, else ``default``."""
    return _dtype_bytes(reader, SSM_DTYPE_KEYS, default)


def state_bytes(conv_elements: int, ssm_elements: int, conv_bytes: int, ssm_bytes: int) -> int:
    """One layer's state of one sequence: conv · b_conv + ssm · b_ssm."""
    return conv_elements * conv_bytes + ssm_elements * ssm_bytes


def mamba1_elements(intermediate: int, d_conv: int, d_state: int) -> tuple[int, int]:
    """(conv, ssm) elements of a Mamba-1 layer: ((d_conv − 1)·I, I·d_state)."""
    return (d_conv - 1) * intermediate, intermediate * d_state


def mamba2_elements(heads: int, head_dim: int, groups: int, d_state: int, d_conv: int) -> tuple[int, int]:
    """(conv, ssm) elements of a Mamba-2 layer: ((d_conv − 1)·(I + 2·n_g·d_state), n_heads·head_dim·d_state)."""
    intermediate = heads * head_dim
    return (d_conv - 1) * (intermediate + 2 * groups * d_state), heads * head_dim * d_state


def gated_deltanet_elements(k_heads: int, k_dim: int, v_heads: int, v_dim: int, kernel: int) -> tuple[int, int]:
    """(conv, ssm) elements of a Gated DeltaNet layer: ((k − 1)·(2·n_k·h_k + n_v·h_v), n_v·h_v·h_k)."""
    return (kernel - 1) * (2 * k_heads * k_dim + v_heads * v_dim), v_heads * v_dim * k_dim
