"""Text and tables for the page: the one escaping rule, display frames, CSV downloads.

**Data is shown as data.**  Anything that came from a link, a file, an upload or a profile
(names, file names, keys, values, messages quoting them) reaches the page through one of:

* ``md_escape``: plain text inside Streamlit's Markdown (alerts, captions, metric labels,
  expander titles): every Markdown, directive and HTML-entity character backslash-escaped,
  control and bidirectional-override characters shown as ``\\uXXXX``, and bare URLs and
  e-mail addresses broken with an invisible word joiner (U+2060) so GitHub-flavoured
  Markdown does not turn them into links — the escapes alone would not stop that: the
  autolink pass runs on the parsed text, after the backslashes are gone;
* ``md_code``: a short datum (a key, a layout code) as an inline code span;
* ``plot_text``: a string for Plotly (trace names, hover text, annotations, axis titles,
  category labels): HTML-escaped (Plotly draws a subset of HTML: ``<a href>``, ``<img>``…)
  and ``%{`` broken, so hover templates cannot be injected.

``md_text`` marks text the program wrote (only ``$`` escaped: two would start LaTeX); it
never carries data.  ``visitor_text`` removes server file paths from a message before it is
shown, and ``failure_text`` is all a visitor sees of an unexpected exception.

Numbers are formatted by ``planner.format`` (the one family of formatters, one
rounding rule everywhere); this module prepares tables:

* ``display_frame``: the columns people read, latencies in ms, friendly headers;
* ``frame_csv`` / ``download_csv``: a table's CSV through ``planner.export``
  (formula-looking cells neutralised), built only when the button is clicked;
* ``highlighted``: a Styler marking chosen rows.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import pandas as pd

from planner.export import frame_to_csv, present_frame
from planner.format import fmt_bytes, fmt_count, fmt_num, fmt_pct, fmt_seconds, fmt_sequences, fmt_usd
from planner.units import MS_PER_S

# CommonMark lets a backslash escape any ASCII punctuation, so escaping more than
# Markdown needs never changes what is shown; & " ' = ^ keep entities and directives inert.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&\"'=^@/%;?])")
#: Runs of backticks (a code span's fence is one longer than the longest run in it).
_BACKTICKS = re.compile(r"`+")
#: C0/C1 controls (tab and newline kept), bidirectional overrides and isolates, line/paragraph separators.
_INVISIBLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029\ufeff]")
#: What GFM's autolink-literal pass turns into a link: a scheme, ``www.``, an e-mail address.
_AUTOLINK = re.compile(r"(?i)(?<=[a-z]):(?=/)|\bwww(?=\.)|@(?=[\w-])|(?<=\bmailto):|(?<=\bxmpp):")
WORD_JOINER = "\u2060"
#: Absolute paths (POSIX or Windows) in a message: shown by their last part only.
_PATH = re.compile(r"(?<![\w.~:/\\])(?:[A-Za-z]:)?[/\\](?:[^\s/\\:'\"]+[/\\])+([^\s/\\:'\"]*)")
HIGHLIGHT_STYLE = "background-color: rgba(84, 162, 75, 0.25); font-weight: 600"
#: What a visitor is told when something unexpected failed (the details go to the server log).
FAILURE = "an internal error occurred; it was logged on the server"


def _visible(text: str) -> str:
    """Control and direction-changing characters as ``\\uXXXX`` (shown, never obeyed)."""
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _unlinked(text: str) -> str:
    """Bare URLs and e-mail addresses with a word joiner after the ``:``, ``www`` or ``@``."""
    return _AUTOLINK.sub(lambda m: m.group() + WORD_JOINER, text)


def md_escape(text: object) -> str:
    """Data as plain text inside Markdown (module doc): nothing in it is markup, a link or an image."""
    return _MD_SPECIAL.sub(r"\\\1", _unlinked(_visible(str(text))))


def md_code(text: object) -> str:
    """A short datum as an inline code span (literal; one line; a fence longer than any backtick run)."""
    body = _visible(str(text)).replace("\n", " ").replace("\t", " ")
    fence = "`" * (max((len(run) for run in _BACKTICKS.findall(body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or not body.strip() else ""
    return f"{fence}{pad}{body}{pad}{fence}"


def md_text(text: str) -> str:
    """Program-written text for Markdown: ``$`` shown literally (two would start LaTeX).  Never data."""
    return str(text).replace("$", "\\$")


def md_list(lines: Iterable[object]) -> str:
    """A Markdown bullet list of escaped lines."""
    return "\n".join(f"- {md_escape(line)}" for line in lines)


def plot_text(text: object) -> str:
    """A string for a Plotly figure: HTML-escaped, hover-template fields broken (module doc)."""
    return html.escape(_visible(str(text)), quote=False).replace("%{", "%\u2060{")


def visitor_text(text: object) -> str:
    """A message without server file paths (each absolute path reduced to its last part)."""
    return _PATH.sub(lambda m: m.group(1) or "(a folder)", str(text))


def failure_text(exc: BaseException) -> str:
    """What a visitor sees of an unexpected exception: its type, never its text or a path."""
    return f"{FAILURE} ({type(exc).__name__})"


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


def _yes_no(v: Any) -> str:
    return "yes" if bool(v) else "no"


def _plain_ms(v: float) -> str:
    return fmt_num(v)


#: How a table cell of each kind reads on screen: the formatters of ``planner.format``, so a number
#: in a table reads like the same quantity anywhere else ("4", not "4.000000"; "$0.0166"; "61.8%").
CELL_FORMATS: dict[str, Callable[[Any], str]] = {
    "count": fmt_count,
    "sequences": lambda v: fmt_sequences(v, None),
    "num": fmt_num,
    "usd": fmt_usd,
    "pct": fmt_pct,
    "ms": _plain_ms,  # a column already in ms (``display_frame``), its header says so
    "seconds": fmt_seconds,
    "bytes": fmt_bytes,
    "yes_no": _yes_no,
    "text": str,
}
MISSING_CELL = "—"
#: Rows a table shows at most (every row is in its CSV).
MAX_TABLE_ROWS = 1000


def table(frame: pd.DataFrame, kinds: Mapping[str, str], flags: Sequence[bool] | None = None) -> Any:
    """A Styler for ``st.dataframe``: each column in ``kinds`` formatted by its kind (``CELL_FORMATS``),
    missing cells as "—" (never "None" or "nan"), rows with a set flag highlighted; at most
    ``MAX_TABLE_ROWS`` rows.  The values underneath stay numbers, so a click on a header still sorts them."""
    frame = frame.head(MAX_TABLE_ROWS).reset_index(drop=True)
    styler = frame.style if flags is None else highlighted(frame, list(flags)[: len(frame)])
    formats: dict[Any, Callable[[Any], str]] = {c: CELL_FORMATS[k] for c, k in kinds.items() if c in frame.columns}
    formats |= {c: _text_or_missing for c in frame.columns if c not in formats}
    # one call: a second ``Styler.format`` resets every column its subset covers (all of them by default),
    # which put raw floats ("95.479167") back in every table
    return styler.format(formats, na_rep=MISSING_CELL)


def _text_or_missing(v: Any) -> str:
    """Any other cell: its text, missing values as "—"."""
    if v is None or (isinstance(v, float) and v != v) or v is pd.NA:
        return MISSING_CELL
    return str(v)
