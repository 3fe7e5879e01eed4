"""One chart as the page shows it: the figure, exactly the data it plots (its CSV) and its caption.
Below the tabs and the page state: both hold charts, neither is imported here."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import plotly.graph_objects as go


@dataclass(frozen=True)
class Chart:
    key: str  # stable slug, used for the CSV file name and widget keys
    title: str
    frame: pd.DataFrame  # exactly the data plotted (downloaded as CSV)
    figure: go.Figure
    caption: str = ""  # one sentence telling what to read from it, with this scenario's numbers
