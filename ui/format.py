"""Text and tables for the page: Markdown escaping, display frames, CSV downloads.

Numbers are formatted by ``planner.format`` (the one family of formatters, one
rounding rule everywhere); this module only makes text safe for Streamlit's
Markdown and prepares tables:

* ``md_escape``: text that came from a link, a file or a user — every Markdown,
  directive and HTML-entity character backslash-escaped, so it shows literally;
* ``md_text``: text the program wrote — only ``$`` escaped (two would start LaTeX);
* ``display_frame``: the columns people read, latencies in ms, friendly headers;
* ``frame_csv`` / ``download_csv``: a table's CSV through ``planner.export``
  (formula-looking cells neutralised), built only when the button is clicked;
* ``highlighted``: a Styler marking chosen rows.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from planner.export import frame_to_csv, present_frame
from planner.units import MS_PER_S

# CommonMark lets a backslash escape any ASCII punctuation, so escaping more than
# Markdown needs never changes what is shown; & " ' = ^ keep entities and directives inert.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&\"'=^])")
HIGHLIGHT_STYLE = "background-color: rgba(84, 162, 75, 0.25); font-weight: 600"


def md_escape(text: str) -> str:
    """Backslash-escape every Markdown/directive character so user text shows literally."""
    return _MD_SPECIAL.sub(r"\\\1", str(text))


def md_text(text: str) -> str:
    """Program-written text for Markdown: ``$`` shown literally (two would start LaTeX)."""
    return str(text).replace("$", "\\$")


def md_list(lines: Iterable[str]) -> str:
    """A Markdown bullet list of escaped lines."""
    return "\n".join(f"- {md_escape(line)}" for line in lines)


def display_frame(frame: pd.DataFrame, headers: Mapping[str, str], seconds_as_ms: Sequence[str] = ()) -> pd.DataFrame:
    """The columns of ``headers`` that ``frame`` has, ``seconds_as_ms`` columns converted
    from s to ms, renamed to ``headers`` (the CSV keeps every column, SI)."""
    cols = [c for c in headers if c in frame.columns]
    shown = frame[cols].copy()
    for c in seconds_as_ms:
        if c in shown:
            shown[c] = shown[c] * MS_PER_S
    return shown.rename(columns=dict(headers))


def frame_csv(frame: pd.DataFrame) -> str:
    """A chart's or table's CSV: presented (no NaN/inf, booleans as words, missing cells
    empty) and neutralised."""
    return frame_to_csv(present_frame(frame.astype(object).where(frame.notna(), None)))


def download_csv(st: Any, label: str, frame: pd.DataFrame, name: str) -> None:
    """A download button whose CSV is built only when clicked."""
    st.download_button(
        label,
        data=lambda: frame_csv(frame),
        file_name=f"kvplan-{name}.csv",
        mime="text/csv",
        key=f"csv-{name}",
        on_click="ignore",
        icon=":material/download:",
    )


def highlighted(frame: pd.DataFrame, flags: list[bool]) -> Any:
    """A Styler that marks the rows whose flag is set (positions, not index labels)."""
    frame = frame.reset_index(drop=True)
    return frame.style.apply(lambda row: [HIGHLIGHT_STYLE if flags[row.name] else ""] * len(row), axis=1)
