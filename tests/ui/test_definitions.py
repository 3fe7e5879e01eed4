"""One name and one rounding per quantity (issue 26), as a person reads the page (AppTest, the real app):
every card, the findings, the Compare GPUs table and the CLI show the same whole-sequence concurrency,
the same throughput under the same name, the same GiB; and the GPUs' prefix cache moves the headline."""

from __future__ import annotations

import io

from planner.cli.main import main as cli_main
from planner.engine.evaluate import evaluate
from planner.engine.metrics import label
from planner.format import fmt_bytes, fmt_seconds, fmt_tokens_per_s, fmt_usd
from planner.links import from_query
from planner.studies.compare import compare_gpus
from tests.tab_harness import run_app
from tests.ui.shown import plain
from ui import headline
from ui.format import CELL_FORMATS
from ui.tabs import compare

#: Llama-3.1-8B on one H100 with 8k prompts: the KV cache holds 54.5 sequences (vLLM 0.33), fewer than the batch of 256.
LINK = {"batch": "256", "prompt": "8192"}


def _cli_text(query: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert cli_main(["evaluate", query], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_concurrency_throughput_and_gib_read_the_same_everywhere(catalog):
    s, _ = from_query(LINK)
    m = evaluate(s, catalog).metrics
    assert 54 < m["max_concurrent_sequences"] < 55  # fractional (vLLM 0.33: 54.5); 3 significant digits would read 54.5
    at = run_app(LINK)
    cards = {plain(c.label): c for c in at.metric}
    # concurrency: whole sequences on the card, in the finding, in the table, in the CLI
    assert plain(cards["Max concurrency"].value) == "54 seqs"
    text = " ".join(plain(x.value) for x in at.markdown) + " ".join(plain(e.label) for e in at.expander)
    assert "caps concurrency at 54 sequences" in text and "only 54 sequences fit" in text
    table = compare.compare_display_frame(compare_gpus(s, catalog)).set_index("GPU")
    cell = table.loc["NVIDIA H100 SXM", "max concurrency (sequences)"]
    assert CELL_FORMATS[compare.COMPARE_KINDS["max concurrency (sequences)"]](cell) == "54"
    cli = _cli_text("batch=256&prompt=8192")
    assert "54 sequences (paged" in cli
    # one throughput under one name, its cost beside it
    name = label("output_tokens_per_s_per_gpu")
    tokens = cards[headline.TOKENS_LABEL]
    assert label("output_tokens_per_s_per_gpu", capital=True).startswith(headline.TOKENS_LABEL) and plain(
        tokens.help
    ).startswith(label("output_tokens_per_s_per_gpu", capital=True))
    # (shown at the batch that fits: 54)
    feasible = evaluate(headline.feasible_scenario(evaluate(s, catalog)), catalog).metrics
    assert plain(tokens.value) == fmt_tokens_per_s(feasible["output_tokens_per_s_per_gpu"])
    assert name in plain(cards[headline.COST_LABEL].help)
    assert name == compare.THROUGHPUT_HEADER and compare.THROUGHPUT_HEADER in table.columns
    assert f"{name}  " in cli and fmt_tokens_per_s(m["output_tokens_per_s_per_gpu"]) in cli
    assert f"{label('cost_per_million_output_tokens_usd')}" in cli
    assert fmt_usd(m["cost_per_million_output_tokens_usd"]) in cli
    # the decode-only figure, wherever it appears, says so
    assert label("decode_tokens_per_s_per_gpu") in plain(tokens.help) and label("decode_tokens_per_s_per_gpu") in cli
    # GiB: the CLI's KV budget is the memory caption's (Memory tab)
    budget = fmt_bytes(m["kv_budget_bytes_per_gpu"])
    assert "KV cache budget" in cli and budget in cli
    memory = run_app(LINK, tab="Memory")
    captions = " ".join(plain(c.value) for c in memory.caption)
    assert f"KV cache {budget}" in captions
    assert "80 GB HBM3 · 79.2 GiB visible to the driver" in captions


def test_the_two_hit_links_move_the_headline(catalog):
    base = {"model": "llama-3.1-70b", "tp": "4", "prompt": "4000", "output": "500", "prefix": "3000"}
    cold, warm = run_app({**base, "hit": "0"}), run_app({**base, "hit": "0.9"})
    shown = [{plain(c.label): plain(c.value) for c in at.metric} for at in (cold, warm)]
    for key in ("TTFT", headline.TOKENS_LABEL, headline.COST_LABEL):
        assert shown[0][key] != shown[1][key], key
    s, _ = from_query({**base, "hit": "0.9"})
    m = evaluate(s, catalog).metrics
    assert shown[1]["TTFT"] == fmt_seconds(m["chunked_ttft_s"])
    ttft = next(c for c in warm.metric if plain(c.label) == "TTFT")
    assert "90.0% of requests find 2,992 cached tokens" in plain(ttft.help)
