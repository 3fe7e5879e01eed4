"""`kvplan evaluate` answers from the engine alone: no pandas, plotly or streamlit for text and
JSON, and the same cells as the one-row CSV the dashboard exports."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from planner.cli.render import scenario_row
from planner.links import from_query
from planner.studies.sweep import scenario_frame
from tests.paths import ROOT

LINKS = (
    "",
    "gpu=h200&model=llama-3.1-70b&tp=2",
    "model=deepseek-v3&gpu=h200&tp=8&wdtype=fp8&kvdtype=fp8",
    "model=mixtral-8x7b&spec=1&gamma=3&batch=1",
    "model=custom&custom=L32-H4096-A32-G8-D128-F14336-V128256-C131072&gpu_price=1.5",
    "model=gemma-2-9b&prompt=8176&output=16&prefix=0&rpm=30",
    "model=llama-3.1-405b&gpu=l4",  # does not fit anywhere near tp=1
)


@pytest.mark.parametrize("link", LINKS)
def test_row_equals_the_one_row_csv_frame(link, catalog):
    scenario, issues = from_query(link)
    assert not [i for i in issues if i.fatal]
    frame_row = scenario_frame(scenario, catalog).iloc[0].to_dict()
    row = scenario_row(scenario, catalog)
    assert list(row) == list(frame_row)
    assert json.dumps(row, indent=2, default=str) == json.dumps(frame_row, indent=2, default=str)


def test_evaluate_imports_no_pandas_plotly_or_streamlit():
    code = (
        "import io, sys\n"
        "from planner.cli.main import main\n"
        "for fmt in ('text', 'json'):\n"
        "    assert main(['evaluate', 'gpu=h200&tp=2', '--format', fmt], out=io.StringIO()) == 0\n"
        "print(','.join(m for m in ('pandas', 'plotly', 'streamlit', 'torch') if m in sys.modules))\n"
    )
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert p.stdout.strip() == ""
