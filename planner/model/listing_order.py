"""The order the catalog lists its entries in: GPU groups by vendor and generation, model presets by family
(``GPU.sort_key``, ``ModelSpec.family``; the sidebar's grouped options)."""

from __future__ import annotations

#: Vendors in the order their GPU groups are listed (others after them, alphabetically).
VENDOR_ORDER = ("NVIDIA", "AMD")
#: Architecture generations, oldest first per vendor: the order GPU groups are listed in.
GENERATION_ORDER = ("Ampere", "Ada Lovelace", "Hopper", "Blackwell", "Blackwell Ultra", "CDNA 3", "CDNA 4")
#: Model families by the start of the model's name (lower case), in the order they are listed.
MODEL_FAMILIES = (
    ("llama", "Llama (Meta)"),
    ("qwen", "Qwen (Alibaba)"),
    ("deepseek", "DeepSeek"),
    ("kimi", "Kimi (Moonshot AI)"),
    ("gpt-oss", "gpt-oss (OpenAI)"),
    ("mistral", "Mistral"),
    ("mixtral", "Mistral"),
    ("gemma", "Gemma (Google)"),
    ("phi", "Phi (Microsoft)"),
    ("falcon", "Falcon (TII)"),
    ("opt", "OPT (Meta)"),
)
OTHER_FAMILY = "Other"
