"""The dashboard over the hostile catalog of ``tests/ui/hostile.py`` (the browser injection test runs
``streamlit run`` on this file).  The folders come from KVPLAN_TEST_HARDWARE / KVPLAN_TEST_MODELS."""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from planner.model.catalog import load_catalog  # noqa: E402 — after the path set-up
from ui import app  # noqa: E402

HARDWARE, MODELS = Path(os.environ["KVPLAN_TEST_HARDWARE"]), Path(os.environ["KVPLAN_TEST_MODELS"])
app.load_catalog = lambda: load_catalog(hardware_dir=HARDWARE, model_dir=MODELS)
app.main()
