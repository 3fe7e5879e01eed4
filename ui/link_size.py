"""What Streamlit does not tell the script: how many parameters the page's link had.

Streamlit ignores a query string of more than 1,000 parameters (or 512 Ki characters)
as a whole and only logs it (``streamlit.runtime.state.query_params.sanitize_query_string``):
the script sees no parameters and the page would show the defaults without a word.  A tiny
component (trusted, static JavaScript: it reads nothing but the browser's own navigation
entry and sends back two numbers) reports the link the page was opened with — the
navigation entry keeps it after the app rewrites the address bar — and the page says what
happened (``dropped_link_note``).
"""

from __future__ import annotations

from typing import Any

from planner.format import fmt_count

#: Streamlit's limits (``CLIENT_STATE_QUERY_STRING_MAX_FIELDS`` / ``_MAX_LENGTH``).
MAX_FIELDS = 1000
MAX_CHARS = 512 * 1024
STATE_KEY = "_link_size"  # the component's key
SEEN_KEY = "_link_size_seen"  # (fields, chars) once reported
JS = """
export default function(component) {
  const { setStateValue } = component;
  const nav = performance.getEntriesByType("navigation")[0];
  const url = new URL(nav && nav.name ? nav.name : window.location.href);
  const query = url.search.length > 1 ? url.search.slice(1) : "";
  setStateValue("fields", query ? query.split("&").length : 0);
  setStateValue("chars", query.length);
}
"""
_COMPONENT: dict[str, Any] = {}


def _component(st: Any) -> Any:
    if "c" not in _COMPONENT:
        _COMPONENT["c"] = st.components.v2.component("kvplan_link_size", js=JS)
    return _COMPONENT["c"]


def _remember(st: Any) -> None:
    value = st.session_state.get(STATE_KEY)
    fields = getattr(value, "fields", None) if value is not None else None
    if fields is not None:
        st.session_state[SEEN_KEY] = (int(fields), int(getattr(value, "chars", 0) or 0))


def measure(st: Any) -> tuple[int, int] | None:
    """(parameters, characters) of the link the page was opened with, once the browser said; mounts the
    component until it has."""
    seen = st.session_state.get(SEEN_KEY)
    if seen is not None:
        return seen
    result = _component(st)(key=STATE_KEY, on_fields_change=lambda: _remember(st), on_chars_change=lambda: None)
    fields = getattr(result, "fields", None)
    if fields is None:
        return None
    seen = (int(fields), int(getattr(result, "chars", 0) or 0))
    st.session_state[SEEN_KEY] = seen
    return seen


def dropped_link_note(fields: int, chars: int) -> str | None:
    """The warning when Streamlit dropped the whole link, else None."""
    if fields > MAX_FIELDS:
        what = f"{fmt_count(fields)} parameters; the server reads a link of at most {fmt_count(MAX_FIELDS)}"
    elif chars > MAX_CHARS:
        what = f"{fmt_count(chars)} characters; the server reads a link of at most {fmt_count(MAX_CHARS)}"
    else:
        return None
    return (
        f"This link has {what}, so none of it was read and the defaults are shown. A kvplan link needs one "
        "parameter per changed input (at most a few dozen): remove the repeated or unknown ones and open it again."
    )
