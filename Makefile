# `make run` and `make test` are the two set-up commands (see README.md).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
EXTRAS := server,openai,anthropic,gemini,cli,local,mcp,durable,test,docs

.PHONY: venv run test lint bench playground dist docs docs-gen

# The embedded model's GGUF file comes in a companion wheel built from packages/ (its build
# fetches the file; see packages/callwright-smollm2/README.md). It is built once into dist/
# and rebuilt only when its sources change.
MODEL_DIR := packages/callwright-smollm2
MODEL_VERSION := $(shell sed -n 's/^__version__ = "\(.*\)"/\1/p' $(MODEL_DIR)/src/callwright_smollm2/__init__.py)
MODEL_WHEEL := dist/callwright_smollm2-$(MODEL_VERSION)-py3-none-any.whl
MODEL_SDIST := dist/callwright_smollm2-$(MODEL_VERSION).tar.gz
MODEL_SOURCES := $(MODEL_DIR)/pyproject.toml $(MODEL_DIR)/hatch_build.py \
	$(wildcard $(MODEL_DIR)/src/callwright_smollm2/*.py)
BUILD_TOOL := $(VENV)/.build-installed

$(BUILD_TOOL):
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip build
	touch $@

$(MODEL_WHEEL) $(MODEL_SDIST) &: $(BUILD_TOOL) $(MODEL_SOURCES)
	$(PY) -m build -q --outdir dist $(MODEL_DIR)

$(STAMP): pyproject.toml $(MODEL_WHEEL)
	$(PY) -m pip install -q --find-links dist -e '.[$(EXTRAS)]'
	# the model wheel of this checkout, even when one of the same version is installed
	$(PY) -m pip install -q --no-deps --force-reinstall $(MODEL_WHEEL)
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

# The real MCP peers tests/mcp starts and drives: @modelcontextprotocol/server-everything and
# the TypeScript SDK's client (they run on tests/js's Node). mcp-server-time comes from PyPI
# with the test extra.
MCP_JS_DIR := tests/mcp_js
MCP_JS_STAMP := $(MCP_JS_DIR)/node_modules/.installed

$(MCP_JS_STAMP): $(MCP_JS_DIR)/package.json $(MCP_JS_DIR)/package-lock.json
	cd $(MCP_JS_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# The playground page's npm install: @ag-ui/client and the esbuild that bundles it. The
# bundle (playground.js) is committed, so `make run` needs none of this; a test rebuilds
# it and checks the committed copy is current. `make playground` rebuilds it.
PLAYGROUND_DIR := src/callwright/playground
PLAYGROUND_STAMP := $(PLAYGROUND_DIR)/node_modules/.installed

$(PLAYGROUND_STAMP): $(PLAYGROUND_DIR)/package.json $(PLAYGROUND_DIR)/package-lock.json
	cd $(PLAYGROUND_DIR) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

playground: $(PLAYGROUND_STAMP)
	cd $(PLAYGROUND_DIR) && npm run --silent build

# The starter front ends a user copies (examples/react-*): npm ci and a Vite build each;
# tests/examples serves each build with the app's server.py and drives it in Chromium.
AI_SDK_APP := examples/react-ai-sdk
AG_UI_APP := examples/react-ag-ui
STARTER_FILES = $(addprefix $(1)/,package.json package-lock.json index.html vite.config.ts \
	tsconfig.json) $(wildcard $(1)/src/*)

$(AI_SDK_APP)/dist/.built: $(call STARTER_FILES,$(AI_SDK_APP))
	cd $(AI_SDK_APP) && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build
	touch $@

$(AG_UI_APP)/dist/.built: $(call STARTER_FILES,$(AG_UI_APP))
	cd $(AG_UI_APP) && npm ci --no-audit --no-fund --loglevel=error && npm run --silent build
	touch $@

.PHONY: starters
starters: $(AI_SDK_APP)/dist/.built $(AG_UI_APP)/dist/.built

# Debian's chromium for the playground's browser tests (Playwright drives it; it never
# downloads a browser). Skipped when it is already installed.
CHROMIUM := /usr/bin/chromium

$(CHROMIUM):
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null

# Debian's postgresql server for the journal's Postgres tests (tests/_postgres.py starts a
# throw-away cluster of it on 127.0.0.1). Skipped when a server binary is already installed.
.PHONY: postgres
postgres:
	@ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 || { \
		apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; }

test: venv $(JS_STAMP) $(MCP_JS_STAMP) $(PLAYGROUND_STAMP) $(CHROMIUM) postgres starters
	$(PY) -m pytest -q

lint: venv
	$(VENV)/bin/ruff check src tests bench packages
	$(VENV)/bin/ruff format --check src tests bench packages
	$(VENV)/bin/mypy

$(VENV)/.bench-installed: $(STAMP)
	$(PY) -m pip install -q --find-links dist -e '.[$(EXTRAS),bench]'
	touch $@

# callwright's and its model's sdists and wheels, for `pip install --find-links dist ...`
dist: $(MODEL_WHEEL) $(MODEL_SDIST)
	$(PY) -m build -q --outdir dist .

bench: $(VENV)/.bench-installed
	$(PY) bench/overhead.py
	$(PY) bench/encode.py
	$(PY) bench/local_model.py --quiet
	$(PY) bench/load.py

# The documentation site (mkdocs.yml, docs/), served with live reload on 127.0.0.1:8001.
docs: venv
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:8001

# Rewrite the generated reference pages (docs/reference/wire.md and cli.md); a test fails while
# they are stale.
docs-gen: venv
	$(PY) tests/docs_gen.py
