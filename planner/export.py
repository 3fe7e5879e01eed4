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

#: Whole numbers below this are written as integers (beyond it a float64 is not exact).
_WHOLE_LIMIT = 2**53
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
        return int(f) if f.is_integer() and abs(f) < _WHOLE_LIMIT else f
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


def present_column(name: str, values: Any) -> np.ndarray:
    """``present_value`` over a whole column at once (same cells, vectorised).

    Numbers: Python ints where whole (|v| < 2⁵³), Python floats otherwise, the metric's
    word where its rule says so, "n/a" where not finite; flags "true"/"false"; any other
    column (text, None, mixed) is presented once per distinct value."""
    import pandas as pd  # here, not at import: the CLI's text and JSON output need no pandas

    a = np.asarray(values)
    if a.dtype == bool:
        return np.where(a, "true", "false").astype(object)
    if a.dtype.kind in "iuf":
        f = a.astype(np.float64)
        out = f.astype(object)
        finite = np.isfinite(f)
        whole = finite & (np.floor(f) == f) & (np.abs(f) < _WHOLE_LIMIT)
        out[whole] = f[whole].astype(np.int64).astype(object)
        out[~finite] = "n/a"
        rule = METRICS[name].export if name in METRICS else "number"
        if rule == "never_if_inf":
            out[np.isposinf(f)] = "never"
        elif rule == "none_if_zero":
            out[f == 0] = "none"
        return out
    codes, distinct = pd.factorize(a.astype(object).ravel())  # missing (None, NaN, NA) → code −1
    presented = np.empty(len(distinct) + 1, dtype=object)
    presented[:-1] = [present_value(name, v) for v in distinct]
    presented[-1] = present_value(name, None)  # a missing cell is empty
    return presented[codes]


def present_frame(df: pd.DataFrame) -> pd.DataFrame:
    """A DataFrame of inputs + metrics, every cell presented as in ``present_value``."""
    import pandas as pd

    out = {}
    for col in df.columns:
        values = df[col].to_numpy()
        out[col] = present_column(col, values)
        if col in BOUND_COLUMNS:
            out[BOUND_COLUMNS[col]] = np.where(values.astype(bool), "compute", "memory").astype(object)
    return pd.DataFrame(out)


def _neutralised(column: pd.Series) -> pd.Series:
    """``neutralise`` every text cell of a column, once per distinct value."""
    import pandas as pd

    if column.dtype.kind in "biuf":  # numbers and flags hold no text
        return column
    codes, distinct = pd.factorize(column.to_numpy())
    safe = np.empty(len(distinct) + 1, dtype=object)
    safe[:-1] = [("'" + v) if isinstance(v, str) and v.startswith(FORMULA_PREFIXES) else v for v in distinct]
    safe[-1] = None  # missing stays missing (an empty CSV cell)
    return pd.Series(safe[codes], index=column.index, name=column.name)


def frame_to_csv(df: pd.DataFrame, header: bool = True) -> str:
    """CSV text of an already-presented frame, text cells neutralised, headers too
    (``header=False``: the rows only, for writing a long table in pieces)."""
    import pandas as pd

    safe = pd.DataFrame({c: _neutralised(df[c]) for c in df.columns})
    safe.columns = [neutralise(str(c)) for c in df.columns]
    buf = io.StringIO()
    safe.to_csv(buf, index=False, header=header, lineterminator="\n")
    return buf.getvalue()
