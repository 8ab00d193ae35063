# The two set-up commands of the README, and CI's:
#   make demo   fresh virtual environment, install the core with the embedded model and plots (.[embedded,plots]), compare four
#               strategies on four questions over five short reports (examples/) offline on the embedded model (no API key, no network)
#   make test   fresh virtual environment, install every extra, the test and the docs tools (.[all,test,docs]), lint and format check (ruff),
#               type-check (mypy), run the default test suite (it builds the docs site too) on two workers, a file per worker at a time (prints the 15 slowest tests and files)
#   make test-fast  the unit tier only (-m unit: no process, server, embedded model, race or whole run; tests/tiers.py),
#                   under a minute on 2 cores, no lint: the loop while editing
#   make test-all   the default suite plus the slow end-to-end tests (-m slow), not Ray
#   make test-ray   install the [ray] extra and run the Ray tests on a local Ray instance (CI runs it)
#   make docs       build the manual (docs/, mkdocs.yml) as a site into site/, offline, failing on any warning
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= $(shell command -v python3.11 || command -v python3)
BIN := $(VENV)/bin
# llama-cpp-python compiles llama.cpp from source. A native build emits AMX / AVX-512 kernels
# that crash (SIGSEGV in llama_decode) on VMs that advertise but do not permit them, so build
# for AVX2, which every x86-64-v3 machine runs.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# Every model the library uses ships inside a package: never reach for the hub.
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

.PHONY: install install-demo install-ray demo test test-fast test-all test-ray bench docs
# install: every extra and the test tools (what the test suite exercises); install-demo: the core (an
# OpenAI-compatible server and BM25), the embedded model and the report's plots (docs/install.md).
install: $(VENV)/.installed
install-demo: $(VENV)/.installed-demo
install-ray: $(VENV)/.installed-ray

$(VENV)/.installed: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[all,test,docs]"
	touch $@

$(VENV)/.installed-demo: pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[embedded,plots]"
	touch $@

$(VENV)/.installed-ray: $(VENV)/.installed
	$(BIN)/python -m pip install -q -e ".[all,test,docs,ray]"
	touch $@

demo: install-demo
	$(BIN)/longctx demo

test: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadfile

test-fast: install
	$(BIN)/python -m pytest -m unit

test-all: install
	$(BIN)/python -m pytest -m "not ray"

# LONGCTX_REQUIRE_RAY: a missing Ray fails the run instead of skipping its tests.
test-ray: install-ray
	LONGCTX_REQUIRE_RAY=1 $(BIN)/python -m pytest -m ray tests/test_ray.py tests/test_ray_index.py tests/test_budget_channel_ray.py tests/test_rlm_runs.py

bench: install
	$(BIN)/python -m pip install -q -e ".[bench]"
	$(BIN)/python -m benchmarks.bench_retrieval

# --strict: a broken link or anchor, a page missing from the nav, a docstring mkdocstrings cannot read fails the build
# (not with --quiet, which hides the warnings from --strict too).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
