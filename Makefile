# `make run` and `make test` are the two set-up commands (see README.md).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := server,openai,anthropic,cli,test

.PHONY: venv run test lint bench

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	touch $(STAMP)

venv: $(STAMP)

run: venv
	$(PY) examples/deploy.py

test: venv
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install -q -e '.[$(EXTRAS),bench]'
	touch $@

bench: $(VENV)/.bench-installed
	$(PY) bench/overhead.py
