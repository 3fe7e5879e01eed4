"""Data is shown as data (issue 20): a profile name, a model name and a profile file name that are
Markdown, links, a remote image, a colour directive and HTML render as text in every tab and panel
(AppTest: every Markdown field the page sends is checked), and never as HTML in a Plotly figure.
The same page in a real browser, with every outbound request blocked and logged: test_browser.py."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from google.protobuf.json_format import MessageToDict
from streamlit.testing.v1 import AppTest

from planner.model.catalog import load_catalog
from tests.tab_harness import run_app as run
from tests.ui.hostile import BAD_FILE, EVIL_GPU, EVIL_MODEL, INJECTED, RAW_MARKERS, write_hostile_catalog
from tests.ui.shown import plain
from ui import cache
from ui.format import md_code, md_escape, plot_text, visitor_text

#: Proto fields that hold plain text (never Markdown): a widget's options and values, code, table bytes.
PLAIN_FIELDS = {
    "options",
    "value",
    "default",
    "codeText",
    "data",
    "rawValue",
    "rawValues",
    "formattedValue",
    "url",
    "spec",
}


def strings(message: dict | list | str, field: str = "") -> list[tuple[str, str]]:
    """(field, text) of every string in a proto dict."""
    if isinstance(message, dict):
        return [pair for k, v in message.items() for pair in strings(v, k)]
    if isinstance(message, list):
        return [pair for v in message for pair in strings(v, field)]
    return [(field, message)] if isinstance(message, str) else []


def nodes(node):
    yield node
    for child in getattr(node, "children", {}).values():
        yield from nodes(child)


def page_texts(at: AppTest) -> tuple[list[tuple[str, str]], list[str]]:
    """(Markdown-bearing (field, text) pairs, every string of every Plotly figure) of the page."""
    markdown, plotly = [], []
    for node in nodes(at._tree):
        proto = getattr(node, "proto", None)
        if proto is None or not hasattr(proto, "DESCRIPTOR"):
            continue
        data = MessageToDict(proto)
        if node.type == "plotly_chart":
            spec = json.loads(data.get("spec", "{}") or "{}")
            plotly += [text for _, text in strings(spec)]
            continue
        if node.type == "code":
            continue
        markdown += [(f, t) for f, t in strings(data) if f not in PLAIN_FIELDS]
    return markdown, plotly


@pytest.fixture
def hostile_app(tmp_path, monkeypatch):
    """AppTest of app.py over the hostile catalog (the app's caches cleared before and after)."""
    from ui import app as ui_app

    hardware, models = write_hostile_catalog(tmp_path)
    monkeypatch.setattr(ui_app, "load_catalog", lambda: load_catalog(hardware_dir=hardware, model_dir=models))
    ui_app.catalog.clear()
    yield
    ui_app.catalog.clear()
    for c in cache.CACHES:
        c.clear()


def live(markdown: str) -> str:
    """What Markdown would interpret: backslash-escaped characters and code spans taken out."""
    text = re.sub(r"\\.", "\x00", markdown, flags=re.S)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "\x00", text, flags=re.S)


def assert_inert(at: AppTest) -> str:
    """Every Markdown text of the page free of live markup; returns the page's text as shown."""
    markdown, plotly = page_texts(at)
    for field, text in markdown:
        for marker in RAW_MARKERS:
            assert marker not in live(text), (field, text[:300])
    for text in plotly:
        assert "<a " not in text and "<img" not in text and INJECTED not in text, text[:300]
    return "\n".join(plain(t) for _, t in markdown)


HOSTILE_LINKS = {
    "fits": {"gpu": EVIL_GPU, "model": EVIL_MODEL},
    "does not fit": {"gpu": EVIL_GPU, "model": "llama-3.1-405b"},
}


@pytest.mark.parametrize("case", HOSTILE_LINKS, ids=list(HOSTILE_LINKS))
def test_hostile_names_render_as_text_in_every_tab(hostile_app, case):
    at = run(HOSTILE_LINKS[case])
    tabs = [t.label for t in at.tabs]
    shown = assert_inert(at)
    assert INJECTED in shown  # the name is on the page, as its own characters
    assert BAD_FILE.removesuffix(".toml") in shown  # the skipped file is named as text
    if case == "does not fit":
        assert "Does not fit" in shown
    for tab in tabs:
        at.session_state["_tab"] = tab
        at.run()
        assert not at.exception, (tab, [e.message for e in at.exception])
        assert_inert(at)


def test_the_checker_fails_on_the_old_escaping():
    """The check above is not vacuous: the old rule (only ``$`` escaped, or backslashes without breaking the
    bare link) leaves live markup it catches."""
    old = INJECTED.replace("$", "\\$")
    assert any(marker in live(old) for marker in RAW_MARKERS)
    assert live(md_escape(INJECTED)) == live(md_escape(INJECTED)).replace("https://", "")
    # backslashes alone leave the bare link: GFM autolinks the parsed text, where the escapes are gone
    backslashed = md_escape(INJECTED).replace("\u2060", "")
    parsed = re.sub(r"\\(.)", r"\1", md_escape(INJECTED))  # the text GFM's autolink pass sees
    assert "https://evil" in plain(backslashed) and "https://evil" not in parsed and "https:\u2060//evil" in parsed


@pytest.mark.parametrize(
    "text",
    [
        INJECTED,
        BAD_FILE,
        "see www.evil.example or mail a@evil.example",
        "\u202egnp.exe",
        "`code` $x$ <script>alert(1)</script> &amp; %{x}",
    ],
)
def test_every_rule_keeps_the_characters_and_kills_the_markup(text):
    escaped = md_escape(text)
    for marker in RAW_MARKERS + ("<script", "`code`", "$x$"):
        assert marker not in live(escaped)
    parsed = re.sub(r"\\(.)", r"\1", escaped)  # what GFM's autolink pass sees: broken by the word joiner
    assert "www.evil" not in parsed and "@evil" not in parsed and "://" not in parsed
    assert "\u202e" not in escaped
    visible = plain(escaped)
    assert visible == text.replace("\u202e", "\\u202e")  # the same characters, shown
    plot = plot_text(text)
    assert "<" not in plot and "%{" not in plot
    code = md_code(text)
    assert code.startswith("`") and "\n" not in code


def test_server_paths_leave_the_message():
    msg = visitor_text("/srv/kvplan/hardware_profiles/x.toml: nested too deeply; see C:\\a\\b.toml")
    assert msg == "x.toml: nested too deeply; see b.toml"
    assert visitor_text("tokens/s at 1/2 the rate; https://example.org/a/b") == (
        "tokens/s at 1/2 the rate; https://example.org/a/b"
    )


def test_figures_escape_names_from_files():
    from ui.figures.serving import sizing_figure
    from ui.tabs.crosscheck import _serving_figure

    frame = pd.DataFrame(
        {
            "point": ['<a href="https://evil.example">run</a>'],
            "measured_s": [0.1],
            "profile_s": [0.11],
            "calibrated_s": [0.1],
        }
    )
    spec = _serving_figure(frame).to_json()
    assert "<a href" not in spec and "&lt;a href" in spec
    table = pd.DataFrame(
        {
            "gpu": ["<img src=x onerror=alert(1)>"],
            "tp": [1],
            "replicas": [2],
            "status": ["meets SLOs"],
            "best": [True],
            "cost_per_hour_usd": [3.0],
            "gpus": [2],
            "cost_per_million_output_tokens_usd": [1.0],
        }
    )
    assert "<img" not in sizing_figure(table).to_json()
