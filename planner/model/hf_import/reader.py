"""Reading a config.json: parsing, the language model's part, typed fields, every problem at once.

Nothing here knows a model family.  :func:`parse_config` turns the text into a
dict (``json.loads`` only; ``NaN``/``Infinity`` read as floats, nesting too
deep reported), :func:`language_model_config` picks a multimodal model's
``text_config``, and :class:`ConfigReader` reads typed fields under their
aliases, recording each problem instead of stopping at the first.
"""

from __future__ import annotations

import json
import math
from functools import cache
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from planner.model.specs import ModelSpec

#: Largest config.json text accepted (real ones are 1–5 KB).
MAX_CONFIG_BYTES = 1_000_000

#: Aliases of the core fields, the name Hugging Face uses today first.
LAYERS_KEYS = ("num_hidden_layers", "n_layer", "num_layers")
HIDDEN_KEYS = ("hidden_size", "n_embd")
HEADS_KEYS = ("num_attention_heads", "n_head")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")

#: Prefix of the message for values outside the ModelSpec bounds.
OUT_OF_BOUNDS = "config.json describes a model outside the planner's bounds: "


def field_names(keys: tuple[str, ...]) -> str:
    """``'a' (or 'b', 'c')`` for messages."""
    head = f"'{keys[0]}'"
    if len(keys) == 1:
        return head
    return head + " (or " + ", ".join(f"'{k}'" for k in keys[1:]) + ")"


def describe(value: Any) -> str:
    """A short, safe rendering of a config value for a message (never its full text)."""
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {shown!r}"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, (list, dict)):
        return "a list" if isinstance(value, list) else "an object"
    return repr(value)


@cache
def _spec_bounds(spec_field: str) -> TypeAdapter[int]:
    """A validator of one ModelSpec integer field's bounds (its ``ge``/``le`` metadata)."""
    metadata = ModelSpec.model_fields[spec_field].metadata
    return TypeAdapter(Annotated[(int, *metadata)])


class ConfigReader:
    """Reads typed fields from the config dict, collecting every problem.

    ``problems``: missing or mistyped fields (one line each); ``out_of_bounds``:
    values outside the ModelSpec bounds, as ``'key' (field): rule``; ``origin``:
    ModelSpec field -> the config.json key it came from (for messages).
    """

    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.problems: list[str] = []
        self.out_of_bounds: list[str] = []
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
        """The first of ``keys`` present, as an integer >= ``minimum`` (an integral float is accepted).

        Absent: ``default`` (a problem when ``required``); mistyped or too small: a problem and
        ``default``.  ``spec_field`` records which ModelSpec field the key feeds."""
        if isinstance(keys, str):
            keys = (keys,)
        key, value = self._find(keys)
        if key is None:
            if required:
                self.problems.append(f"config.json is missing required field {field_names(keys)}")
            return default
        if spec_field:
            self.origin[spec_field] = key
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problems.append(f"config.json field '{key}' must be an integer, got {describe(value)}")
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

    def shape(
        self,
        keys: tuple[str, ...] | str,
        spec_field: str,
        *,
        required: bool = False,
        default: int | None = None,
        minimum: int = 1,
    ) -> int | None:
        """:meth:`integer` for a key that *is* the ModelSpec field ``spec_field``, checked against
        that field's bounds at once, so no caller loops over a billion layers: out of bounds
        records the rule and gives None."""
        if isinstance(keys, str):
            keys = (keys,)
        key, _ = self._find(keys)
        value = self.integer(keys, required=required, default=default, minimum=minimum, spec_field=spec_field)
        if key is None or value is None:
            return value
        try:
            _spec_bounds(spec_field).validate_python(value)
        except ValidationError as exc:
            self.out_of_bounds.append(f"'{key}' ({spec_field}): {exc.errors()[0]['msg']}")
            return None
        return value

    def flag(self, key: str, default: bool) -> bool:
        """``key`` as true/false; absent or null: ``default``."""
        value = self.cfg.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.problems.append(f"config.json field '{key}' must be true or false, got {describe(value)}")
            return default
        return value

    def text(self, key: str) -> str | None:
        """``key`` as a string; absent or null: None."""
        value = self.cfg.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            self.problems.append(f"config.json field '{key}' must be a string, got {describe(value)}")
            return None
        return value

    def message(self) -> str | None:
        """Every problem found, in one line; None when there is none."""
        parts = list(dict.fromkeys(self.problems))
        if self.out_of_bounds:
            parts.append(OUT_OF_BOUNDS + "; ".join(self.out_of_bounds))
        return "; ".join(parts) or None


def _config_text(config: str | bytes | bytearray) -> str:
    """The text of a config.json, refusing more than MAX_CONFIG_BYTES before decoding anything."""
    if isinstance(config, str):
        # Characters <= UTF-8 bytes, so the cheap length check is safe to do first.
        if len(config) > MAX_CONFIG_BYTES or len(config.encode("utf-8", "surrogatepass")) > MAX_CONFIG_BYTES:
            raise ValueError(
                f"config.json is too large: more than {MAX_CONFIG_BYTES} bytes (limit {MAX_CONFIG_BYTES} bytes, 1 MB)"
            )
        return config
    if len(config) > MAX_CONFIG_BYTES:
        raise ValueError(f"config.json is too large: {len(config)} bytes (limit {MAX_CONFIG_BYTES} bytes, 1 MB)")
    try:
        return bytes(config).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"config.json is not valid JSON: not UTF-8 text ({exc})") from None


def _non_finite(name: str) -> float:
    """``NaN`` / ``Infinity`` / ``-Infinity`` as floats: Python's json.dumps writes them into real
    configs (Nemotron-H's ``time_step_limit``), and a shape field holding one is refused later
    as "must be an integer" (``ConfigReader.integer`` accepts finite integral floats only)."""
    return float(name.lower().replace("infinity", "inf"))


def parse_config(config: str | bytes | bytearray | dict) -> dict[str, Any]:
    """The config as a dict: a dict as given, text through ``json.loads`` (nothing else runs)."""
    if isinstance(config, dict):
        return config
    if not isinstance(config, (str, bytes, bytearray)):
        raise TypeError(
            f"config must be the config.json text (str or bytes) or a parsed dict, not {type(config).__name__}"
        )
    text = _config_text(config)
    try:
        data = json.loads(text.lstrip("\ufeff"), parse_constant=_non_finite)
    except RecursionError:
        raise ValueError("config.json is not valid JSON: nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, over-long integers
        raise ValueError(f"config.json is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"config.json must be a JSON object {{...}}, got {type(data).__name__}")
    return data


def language_model_config(data: dict[str, Any]) -> dict[str, Any]:
    """The language model's part of a multimodal config (``text_config``), else ``data``.

    Used only when the top level has no layer count of its own; the top-level keys
    (``model_type`` of the wrapper, names) stay unless ``text_config`` overrides them."""
    text = data.get("text_config")
    if isinstance(text, dict) and not any(data.get(k) is not None for k in LAYERS_KEYS):
        merged = {k: v for k, v in data.items() if k != "text_config"}
        merged.update(text)
        return merged
    return data


def default_name(reader: ConfigReader, model_type: str) -> str:
    """``_name_or_path``, else the first of ``architectures``, else the model type."""
    path = reader.cfg.get("_name_or_path")
    if isinstance(path, str) and path.strip():
        return path.strip()
    arch = reader.cfg.get("architectures")
    if isinstance(arch, list) and arch and isinstance(arch[0], str) and arch[0].strip():
        return arch[0].strip()
    return model_type or "imported-model"
