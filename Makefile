# The two set-up commands of the README: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

.PHONY: demo test bench
demo: $(VENV)/.installed
	$(PY) examples/train_digits.py

test: $(VENV)/.installed
	$(PY) -m pytest -n 2 -q

bench: $(VENV)/.installed
	$(PY) -m benchmarks.run $(ARGS)
