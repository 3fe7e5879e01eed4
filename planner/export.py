"""Presentation of metrics for CSV and JSON: the one place that turns engine
arrays into cells.  Shared by the CLI and the dashboard so both export the same
columns and values.

Each metric's rule is in ``engine.metrics.METRICS``:
* booleans → ``true``/``false``; the bound flags also as ``compute``/``memory``;
* ``never_if_inf`` (the ridge batch) = inf → ``never`` (the decode matmuls stay memory-bound);
* ``none_if_zero`` (``min_tp_that_fits``) = 0 → ``none`` (does not fit at any tp ≤ 64);
* any other non-finite number → ``n/a`` (never NaN or inf in an export);
* text cells starting with = + - @ (also their full-width forms), tab, CR or NUL get a
  leading ``'`` so spreadsheets do not run them as formulas (OWASP CSV injection;
  OWASP ASVS 5.0 §1.2.10 lists NUL).
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from planner.engine.metrics import BOUND_COLUMNS, METRICS

if TYPE_CHECKING:
    import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r", "\0", "＝", "＋", "－", "＠")


def neutralise(cell: Any) -> Any:
    """Prefix a text cell that a spreadsheet would evaluate as a formula."""
    if isinstance(cell, str) and cell.startswith(FORMULA_PREFIXES):
        return "'" + cell
    return cell


def present_value(key: str, v: Any) -> Any:
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        f = float(v)
        rule = METRICS[key].export if key in METRICS else "number"
        if rule == "never_if_inf" and math.isinf(f) and f > 0:
            return "never"
        if rule == "none_if_zero" and f == 0:
            return "none"
        if not math.isfinite(f):
            return "n/a"
        return int(f) if f.is_integer() and abs(f) < 2**53 else f
    if v is None:
        return ""
    return neutralise(str(v))


def present_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Metric cells for display/export, with ``*_bound`` names added beside the flags."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        out[k] = present_value(k, v)
        if k in BOUND_COLUMNS:
            out[BOUND_COLUMNS[k]] = "compute" if bool(v) else "memory"
    return out


def present_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A DataFrame of inputs + metrics, every cell presented as in ``present_value``."""
    import pandas as pd  # here, not at import: the CLI's text and JSON output need no pandas

    out = {}
    for col in df.columns:
        out[col] = [present_value(col, v) for v in df[col].tolist()]
        if col in BOUND_COLUMNS:
            out[BOUND_COLUMNS[col]] = ["compute" if bool(v) else "memory" for v in df[col].tolist()]
    return pd.DataFrame(out)


def frame_to_csv(df: pd.DataFrame) -> str:
    """CSV text of an already-presented frame, text cells neutralised, headers too."""
    safe = df.map(neutralise)
    safe.columns = [neutralise(str(c)) for c in safe.columns]
    buf = io.StringIO()
    safe.to_csv(buf, index=False, lineterminator="\n")
    return buf.getvalue()
