# kvplan: `make test` runs the whole suite, `make lint` runs ruff and mypy, `make run` starts the dashboard.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN_STAMP := $(VENV)/.installed-run
DEV_STAMP := $(VENV)/.installed-dev
PORT ?= 8501

.PHONY: test lint run bench bench-engine bench-app bench-cli clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# The dashboard's own dependencies only (no pytest, playwright or linters).
$(RUN_STAMP): requirements.txt | $(VENV)/bin/python
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(DEV_STAMP): $(RUN_STAMP) requirements-dev.txt
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@

# pytest-xdist: one worker per core (`-n auto`); `--dist loadfile` keeps each test file, and its module
# fixtures, in one worker.  `make test PYTEST_WORKERS=0` runs in this process (a debugger, -x).
PYTEST_WORKERS ?= auto
test: $(DEV_STAMP)
	$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist loadfile

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# `make run PORT=8600` picks another port.
run: $(RUN_STAMP)
	$(PY) -m planner serve --port $(PORT)

bench: bench-engine bench-app bench-cli

bench-engine: $(DEV_STAMP)
	$(PY) benchmarks/engine_bench.py

bench-app: $(DEV_STAMP)
	$(PY) benchmarks/app_rerun_bench.py

bench-cli: $(RUN_STAMP)
	$(PY) benchmarks/cli_startup_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis .mypy_cache .ruff_cache
