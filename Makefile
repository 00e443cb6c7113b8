# Thin wrappers over the harness-probe CLI and pytest. Every target sets up .venv on first use.
SHELL := /bin/bash
.DEFAULT_GOAL := help

HARNESS ?= reference
SCENARIO ?=
ARGS ?=
OUT ?= probe-out/$(HARNESS)-$(shell date -u +%Y%m%dT%H%M%S)
VENV := .venv
HP := $(VENV)/bin/harness-probe

# mitmproxy 12 (pinned by the proxy image, and imported by the addon's tests) needs Python >= 3.12:
# take the newest 3.13/3.12 on PATH or under pyenv, else python3 if it is new enough.
PYTHON ?= $(shell for p in python3.13 python3.12 $$HOME/.pyenv/versions/3.13*/bin/python3 \
	$$HOME/.pyenv/versions/3.12*/bin/python3 python3; do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
	&& { command -v $$p; break; }; done)

.PHONY: screenshot help probe test test-unit test-integration test-harnesses images base-image lint dist bench lock cleanup docker-check

help:
	@echo "make probe HARNESS=reference [SCENARIO=tool_success] [OUT=dir] [ARGS='--timeout 120']"
	@echo "make test            lint, unit, images, integration, the goldens changes select, in timed phases (GOLDENS=all)"
	@echo "make images          build every image (reused when inputs are unchanged)"
	@echo "make base-image      the Debian trixie root (pull, else debootstrap) and base image"
	@echo "make lint            ruff + mypy + import contracts + actionlint + zizmor (workflows, action.yml) + the packaging checks of make dist"
	@echo "make dist            wheel + sdist into dist/ (python -m build), checked by twine"
	@echo "make bench           audit at scale; runtime overhead; --jobs 1 vs 2; proxy latency"
	@echo "make screenshot      docs/images/episode-page.png from a real reference run (Docker, chromium)"
	@echo "make cleanup         remove containers/networks/volumes left by crashed runs"
	@echo "make lock            re-lock images/*/requirements.lock from requirements.in"

# Two stamps: a probe needs the package and its runtime dependencies only; tests, lint, bench and lock add the
# `test` extra (pytest, mitmproxy, mypy, ruff, the workflow linters, build, twine).
$(VENV)/.installed: pyproject.toml
	@if [ -z "$(PYTHON)" ]; then echo "harness-probe needs Python >= 3.12 (mitmproxy 12); install python3.12 or python3.13, or pass PYTHON=/path/to/python" >&2; exit 2; fi
	@echo "setting up $(VENV) with $(PYTHON)"
	@[ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV)
	@$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e .
	@touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	@echo "adding the test extra to $(VENV)"
	@$(VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	@touch $@

docker-check: $(VENV)/.installed
	@$(HP) -q doctor >/dev/null

probe: docker-check
	$(HP) run --harness $(HARNESS) $(if $(SCENARIO),--scenario $(SCENARIO)) --output $(OUT) $(ARGS)

# In timed phases (lint, unit, images, integration, each golden); goldens as `ci select` picks them over the changes
# since .ci/last-landed (every golden when that cannot be told, or with GOLDENS=all). See docs/performance.md.
test: docker-check $(VENV)/.installed-test
	$(VENV)/bin/python -m tests.phases --record --json probe-out/ci-phases.json

test-unit: $(VENV)/.installed-test
	$(VENV)/bin/pytest tests/unit

test-integration: docker-check $(VENV)/.installed-test
	$(VENV)/bin/pytest tests/integration

test-harnesses: docker-check $(VENV)/.installed-test
	$(VENV)/bin/pytest tests/harnesses

images: docker-check
	$(HP) images build

base-image: docker-check
	$(HP) images build base

lint: $(VENV)/.installed-test
	$(VENV)/bin/ruff format --check orchestrator proxy_addons tests images
	$(VENV)/bin/ruff check orchestrator proxy_addons tests images
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports
	$(VENV)/bin/actionlint .github/workflows/*.yml
	$(VENV)/bin/zizmor --offline --persona auditor .github/workflows/ action.yml
	@$(MAKE) --no-print-directory dist

# The distribution users install: its metadata must pass twine, and the wheel must carry the data folders.
dist: $(VENV)/.installed-test
	rm -rf dist
	$(VENV)/bin/python -m build --outdir dist .
	$(VENV)/bin/twine check --strict dist/*
	@$(VENV)/bin/python -m zipfile -l dist/*.whl | grep >/dev/null 'orchestrator/_data/scenarios/scenario.schema.json' \
	  && $(VENV)/bin/python -m zipfile -l dist/*.whl | grep >/dev/null 'orchestrator/_data/images/reference/Dockerfile' \
	  && $(VENV)/bin/python -m zipfile -l dist/*.whl | grep >/dev/null 'proxy_addons/interpreter.py' \
	  || { echo "the wheel lacks scenarios/, images/ or proxy_addons/" >&2; exit 1; }

# Scale targets: an audit of one rollout of 100,000 calls and of 1,000 and 10,000 saved episodes (no engine);
# then per-episode orchestration overhead on each runtime that answers, beside two bare container starts, and the
# reference catalogue with --jobs 1 and 2; then the proxy's added latency against a minimal HTTP server.
# Each part records its figures; the table between the markers of docs/performance.md is rewritten from them.
bench: $(VENV)/.installed-test
	@rows=$$(mktemp) && export HARNESS_PROBE_BENCH_ROWS=$$rows \
	  && $(VENV)/bin/python -m tests.bench.audit_scale 100000 1000 10000 \
	  && $(VENV)/bin/python -m tests.bench.runtime_overhead \
	  && $(VENV)/bin/python -m tests.bench.proxy_latency \
	  && $(VENV)/bin/python -m tests.bench.table $$rows docs/performance.md; rc=$$?; rm -f $$rows; exit $$rc
	$(VENV)/bin/python -m tests.bench.ci_budget

# docs/images/episode-page.png from a real reference run in a misreporting mode (Docker and chromium).
screenshot: docker-check $(VENV)/.installed-test
	$(VENV)/bin/python -m tests.bench.episode_screenshot

cleanup: docker-check
	$(HP) cleanup

lock: $(VENV)/.installed-test
	@for d in images/*/; do [ -f $$d/requirements.in ] || continue; \
	  echo "locking $$d"; $(VENV)/bin/uv pip compile --quiet --generate-hashes --python-version 3.13 \
	  --python-platform linux --custom-compile-command 'make lock' $$d/requirements.in -o $$d/requirements.lock; done
