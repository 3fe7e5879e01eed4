# kvplan: `make test` runs the whole suite; `make run` starts the dashboard.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8501

.PHONY: test run bench bench-engine bench-app clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.txt -r requirements-dev.txt
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest -q

run: $(STAMP)
	$(PY) -m streamlit run app.py --server.port $(PORT) --server.address 127.0.0.1 --browser.gatherUsageStats false

bench: bench-engine bench-app

bench-engine: $(STAMP)
	$(PY) benchmarks/engine_bench.py

bench-app: $(STAMP)
	$(PY) benchmarks/app_rerun_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
