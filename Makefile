# pykai: every target sets itself up (venv + deps), idempotently.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test lint bench clean peers test-peers prometheus image-builder chromium

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	@touch $@

setup: $(STAMP)

demo: $(STAMP)
	$(BIN)/pykai demo

lint: $(STAMP)
	$(BIN)/ruff check src tests
	$(BIN)/ruff format --check src tests
	$(BIN)/mypy
	$(BIN)/lint-imports

peers:  # every real counterpart, built from the Go modules pinned in tools/peers (cached by version)
	bash scripts/peers > /dev/null

test-peers:  # the counterparts the tests use: Kubernetes v1.34, etcd, KWOK, KubeRay, Helm
	bash scripts/peers --tests > /dev/null

prometheus:  # Debian's Prometheus server, for the test that scrapes pykai run (cached)
	bash scripts/prometheus > /dev/null

image-builder:  # buildah and a local Debian base image, to build the Dockerfile in the tests
	bash scripts/image-builder > /dev/null

chromium:  # Debian's Chromium, headless, for the dashboard's browser tests (apt; idempotent)
	bash scripts/chromium > /dev/null

test: lint test-peers prometheus image-builder chromium
	$(BIN)/pytest

bench: $(STAMP)
	$(BIN)/pykai bench engine -o json

clean:
	rm -rf $(VENV) .pykai .pytest_cache .mypy_cache .ruff_cache
