# Two commands do all the set-up on a fresh machine:
#   make run   - install, index the project's docs/ into index_store/ if it is empty, serve them over stdio
#   make test  - install, run the test suite
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run serve-http test test-slow install clean-store

# Recipes are silent and their output goes to stderr: `make run` is a stdio MCP server, whose stdout carries
# nothing but protocol messages.
$(STAMP): pyproject.toml
	@python3 -m venv $(VENV) >&2
	@# The CPU build of torch first, so nothing pulls CUDA packages.
	@$(BIN)/pip install --quiet torch==2.13.0 >&2
	@$(BIN)/pip install --quiet -e ".[test,eval]" >&2
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@HF_HUB_OFFLINE=1 $(BIN)/granrag-mcp serve --index-if-empty docs

serve-http: $(STAMP)
	@HF_HUB_OFFLINE=1 $(BIN)/granrag-mcp serve --index-if-empty docs --transport http

test: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q

test-slow: $(STAMP)
	HF_HUB_OFFLINE=1 $(BIN)/pytest -q -m slow

clean-store:
	rm -rf index_store/gen-* index_store/CURRENT index_store/writer.*
