# Two commands do all the set-up on a fresh machine:
#   make run   - install, index the project's docs/ into index_store/ if it is empty, serve them over stdio
#   make test  - install, run the test suite
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# MCP Inspector's CLI, pinned, in a git-ignored folder: tests/server/test_inspector.py drives the server with it.
# Its package asks for node 22; the CLI flows the test runs work on node 20 too.
INSPECTOR_VERSION := 2.12.0
INSPECTOR := .tools/inspector
INSPECTOR_STAMP := $(INSPECTOR)/.installed-$(INSPECTOR_VERSION)
# The official MCP Bundle CLI, pinned, beside it: tests/test_mcpb.py validates and packs packaging/mcpb/ with it.
MCPB_VERSION := 2.1.2
MCPB := .tools/mcpb
MCPB_STAMP := $(MCPB)/.installed-$(MCPB_VERSION)

# The official MCP conformance suite, pinned, with the node 22 it needs (from npm's `node` package), beside them:
# tests/server/test_conformance.py runs its server scenarios on protocols 2026-07-28 and 2025-11-25.
CONFORMANCE_VERSION := 0.2.0-alpha.12
CONFORMANCE := .tools/conformance
CONFORMANCE_STAMP := $(CONFORMANCE)/.installed-$(CONFORMANCE_VERSION)

# OCR of scanned pages and images: Tesseract and its language data from the OS packages, installed where this runs
# as root with apt-get; elsewhere one line says what to install, and the OCR tests skip saying why.
OCR_PACKAGES := tesseract-ocr tesseract-ocr-eng tesseract-ocr-chi-sim tesseract-ocr-hin
# Fonts the OCR tests draw their Chinese and Hindi pages with (they skip without them).
OCR_TEST_FONTS := fonts-wqy-microhei fonts-lohit-deva
# The browser the evidence view's test drives with Playwright (the `test` extra), from the OS packages: Playwright's
# own browser would be a download. Without it that test skips, saying why.
BROWSER_PACKAGES := chromium

.PHONY: run serve-http test test-slow install clean-store dist mcpb ocr browser

# Recipes are silent and their output goes to stderr: `make run` is a stdio MCP server, whose stdout carries
# nothing but protocol messages.
$(STAMP): pyproject.toml
	@python3 -m venv $(VENV) >&2
	@# The CPU build of torch first, so nothing pulls CUDA packages.
	@$(BIN)/pip install --quiet torch==2.13.0 >&2
	@$(BIN)/pip install --quiet -e ".[test,eval]" >&2
	@touch $(STAMP)

# Only where npm exists; without npm, or when the registry cannot be reached, make goes on and the Inspector
# test skips, saying why.
$(INSPECTOR_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
		if npm install --prefix $(INSPECTOR) --no-audit --no-fund --loglevel=error \
			@modelcontextprotocol/inspector@$(INSPECTOR_VERSION) >&2; then touch $@; \
		else echo "MCP Inspector not installed (npm failed): its test will skip" >&2; fi; \
	else echo "npm not found: MCP Inspector not installed, its test will skip" >&2; fi

$(MCPB_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
		if npm install --prefix $(MCPB) --no-audit --no-fund --loglevel=error \
			@anthropic-ai/mcpb@$(MCPB_VERSION) >&2; then touch $@; \
		else echo "mcpb not installed (npm failed): its test will skip" >&2; fi; \
	else echo "npm not found: mcpb not installed, its test will skip" >&2; fi

$(CONFORMANCE_STAMP):
	@if command -v npm >/dev/null 2>&1; then \
		if npm install --prefix $(CONFORMANCE) --no-audit --no-fund --loglevel=error \
			@modelcontextprotocol/conformance@$(CONFORMANCE_VERSION) node@22 >&2; then touch $@; \
		else echo "MCP conformance suite not installed (npm failed): its test will skip" >&2; fi; \
	else echo "npm not found: MCP conformance suite not installed, its test will skip" >&2; fi

ocr:
	@if dpkg -s $(OCR_PACKAGES) $(OCR_TEST_FONTS) >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$(OCR_PACKAGES) $(OCR_TEST_FONTS); } >&2 \
			|| echo "Tesseract not installed (apt-get failed): scanned PDFs and images are not read, OCR tests skip" >&2; \
	elif command -v tesseract >/dev/null 2>&1; then :; \
	else echo "Tesseract not found: scanned PDFs and images are not read until it is installed (apt-get install $(OCR_PACKAGES))" >&2; fi

browser:
	@if dpkg -s $(BROWSER_PACKAGES) >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			$(BROWSER_PACKAGES); } >&2 \
			|| echo "Chromium not installed (apt-get failed): the evidence view's browser test skips" >&2; \
	else echo "Chromium not found: the evidence view's browser test skips (apt-get install $(BROWSER_PACKAGES))" >&2; fi

install: $(STAMP) $(INSPECTOR_STAMP) $(MCPB_STAMP) $(CONFORMANCE_STAMP) ocr browser

run: $(STAMP) ocr
	@HF_HUB_OFFLINE=1 $(BIN)/granrag-mcp serve --library docs

serve-http: $(STAMP) ocr
	@HF_HUB_OFFLINE=1 $(BIN)/granrag-mcp serve --library docs --transport http

# tests/test_packaging.py builds the sdist and wheel and installs the wheel in a new venv; these targets keep them.
dist: $(STAMP)
	$(BIN)/python -m build --outdir dist

mcpb: $(MCPB_STAMP)
	$(MCPB)/node_modules/.bin/mcpb pack packaging/mcpb dist/granrag-mcp.mcpb

# Lint, types, the suite, then the embedding and server paths again with torch, oneDNN and FAISS held to AVX2: the
# fp32 path a CPU without AVX-512 takes (precision `auto` resolves to fp32 there), exercised on any machine.
AVX2_ONLY := ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 FAISS_OPT_LEVEL=avx2
test: $(STAMP) $(INSPECTOR_STAMP) $(MCPB_STAMP) $(CONFORMANCE_STAMP) ocr browser
	$(BIN)/ruff check granrag_mcp tests benchmarks
	$(BIN)/ruff format --check granrag_mcp tests benchmarks
	$(BIN)/mypy
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q
	$(AVX2_ONLY) HF_HUB_OFFLINE=1 $(BIN)/pytest -q tests/embedding tests/test_rerankers.py tests/server/transport/test_stdio.py

test-slow: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -m slow

clean-store:
	rm -rf index_store/gen-* index_store/CURRENT index_store/writer.*
