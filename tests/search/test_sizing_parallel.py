"""Sizing over parallel layouts (issue 15's must-show): DeepSeek-V3 gets multi-node layouts with their decode
step's communication share, and the terminal table keeps long GPU keys apart from the layout."""

from __future__ import annotations

import io

import pytest

from planner.cli.main import main
from planner.model.scenario import Scenario
from planner.search.sizing import size_fleet, sizing_text

REQUESTS = 30


@pytest.fixture(scope="module")
def deepseek(catalog):
    s = Scenario(
        model="deepseek-v3", gpu="h100-sxm", wdtype="fp8", quant="fp8-block", rate=2.0, prompt=1024, output=128
    )
    return size_fleet(s, catalog, gpus=["h100-sxm"], max_requests=REQUESTS)


def test_deepseek_v3_sizing_lists_multi_node_layouts_with_their_communication_share(deepseek):
    t = deepseek.table.set_index("layout")
    # 671 B parameters in fp8 do not fit one 8 × H100 node: the plain tps do not fit, two-node layouts do
    assert not t.loc["tp8", "fits"]
    for layout in ("tp8·pp2", "tp16"):
        row = t.loc[layout]
        assert row["nodes"] == 2 and row["gpus_per_instance"] == 16
        assert row["status"] == "meets SLOs"
        assert 0.0 < row["decode_comm_frac"] < 1.0
    # tensor parallelism across the two nodes pays the network on every all-reduce; pp sends once per stage
    assert t.loc["tp16", "decode_comm_frac"] > t.loc["tp8·pp2", "decode_comm_frac"]
    multi = deepseek.table[deepseek.table["nodes"] >= 2]
    assert len(multi) >= 2 and ((multi["decode_comm_frac"] > 0) & (multi["decode_comm_frac"] < 1)).all()
    text = sizing_text(deepseek)
    assert "tp8·pp2" in text and "tp16" in text


def _column_start(line: str, after: str) -> int:
    return line.index(after) + len(after)


def test_text_table_sizes_its_columns_to_the_longest_gpu_key(catalog):
    s = Scenario(model="llama-3.2-1b", rate=1.0, prompt=256, output=32)
    z = size_fleet(s, catalog, gpus=["rtx-pro-6000-blackwell", "l4"], tps=(8,), max_requests=20, layouts=False)
    lines = sizing_text(z).splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("GPU"))
    layout_at = lines[header].index("layout")
    end = lines.index("", header)
    rows = lines[header + 1 : end]
    assert [line.split()[0] for line in rows] == ["l4", "rtx-pro-6000-blackwell"]  # cheaper first
    for line in rows:
        key = line.split()[0]
        assert line[len(key)] == " "  # never "rtx-pro-6000-blackwelltp8"
        assert line[layout_at:].startswith("tp8")  # the layout column starts where its title does
    assert lines[header].index("nodes") > len("rtx-pro-6000-blackwell") + len("layout")
    pools = [line for line in lines[end + 1 :] if line.startswith(("l4", "rtx-pro"))]
    assert pools and all(line[layout_at - 2 : layout_at] == "  " for line in pools)  # the same GPU column


def test_cli_size_shows_layout_nodes_and_communication_columns():
    out, err = io.StringIO(), io.StringIO()
    code = main(["size", "model=llama-3.1-405b&rate=1&prompt=512&output=64&sim_requests=20"], out, err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    header = next(line for line in lines if line.startswith("GPU"))
    assert header.split()[:3] == ["GPU", "layout", "nodes"] and "comm" in header.split()
    # the default search: Llama-3.1-405B in bf16 needs two 8 × H100 nodes (tp16 or tp8·pp2), with its share
    h100 = [line for line in lines if line.startswith("h100-sxm ")]
    assert h100 and all(line.split()[1] in ("tp16", "tp8·pp2") and line.split()[2] == "2" for line in h100)
    assert all(any(cell.endswith("%") and 0 < int(cell[:-1]) < 100 for cell in line.split()) for line in h100)
