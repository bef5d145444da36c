# The two set-up commands of the README: `make demo` and `make test`.
# `make demo` installs ember's runtime dependencies only; `make test` adds the dev
# extra (pytest, hypothesis, xdist, the MPI extra and torch as the test oracle).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(VENV)/.installed-runtime: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(VENV)/.installed-runtime $@

.PHONY: demo test bench
demo: $(VENV)/.installed-runtime
	$(PY) examples/train_digits.py

test: $(VENV)/.installed-dev
	$(PY) -m pytest -n 2 -q

bench: $(VENV)/.installed-dev
	$(PY) -m benchmarks.run $(ARGS)
