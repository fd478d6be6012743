# The README's two commands: `make lab` and `make test` (`make help` lists all).
# Both create .venv when it is missing and install into it: torch's build first
# (tools/install_torch.py, see TORCH), then the learner's requirements.txt;
# `make test` and every maintainer's target add requirements-dev.txt (the tests,
# the builds, JupyterHub and nbgrader), which `make lab` never installs.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch's build on Linux: cpu (PyTorch's CPU index; PyPI's if that cannot be
# reached), a CUDA tag such as cu128, or pypi. macOS and Windows: PyPI's (CPU).
TORCH ?= cpu
# install stamps; tools.install_torch --stamp writes the first only when the torch
# it finds is the TORCH build (not PyPI's after an unreachable CPU index), so that
# the next make tries PyTorch's index again
STAMP := $(VENV)/.installed-$(TORCH)
DEV_STAMP := $(VENV)/.installed-dev-$(TORCH)
# the source folders that ruff lints and formats (tests/course/test_lint.py reads this)
SOURCES := helpers tests notebooks tools benchmarks
# make test's pytest processes; loadfile keeps each notebook (one kernel) and each
# test file in one process, handed out in collection order (conftest.py puts the
# longest first and spreads the student-copy runs), not by test count.
# PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2
PYTEST_XDIST := -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder
# The test processes and their kernels already fill both cores: one thread each
# for OpenBLAS and OpenMP (torch), whose pools would otherwise add threads that
# wait on each other (measured on 2026-12-01: 6-9 s of make test's 155 s). The
# lessons that train set torch's threads themselves; learners' runs are unchanged.
ONE_THREAD := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# The test runs keep Python's bytecode caches even where PYTHONDONTWRITEBYTECODE
# is set (an empty value turns it off): otherwise every test process compiles the
# ~200 test modules again and pytest rewrites their asserts again (measured on
# 2026-12-03: collection 12.0 s against 7.0 s a process), and every kernel
# compiles helpers/ again.
TEST_ENV := $(ONE_THREAD) PYTHONDONTWRITEBYTECODE=
# JupyterLab refuses to run as root unless told; pass the flag only then.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: help lab test test-browser test-slow check notebooks student slides html lint format venv venv-dev clean
.PHONY: lab-zh extract-zh check-zh notebooks-zh student-zh slides-zh html-zh
.DEFAULT_GOAL := help

## make help: list these commands
help:
	@sed -n 's/^## //p' $(MAKEFILE_LIST)

## make venv: create .venv, install torch (TORCH=cpu) and the learner's requirements.txt
venv: $(STAMP)

## make venv-dev: venv, then the maintainer's requirements-dev.txt (make test does this)
venv-dev: $(DEV_STAMP)

$(STAMP): requirements.txt pyproject.toml tools/install_torch.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	TORCH=$(TORCH) $(BIN)/python -m tools.install_torch
	$(BIN)/python -m pip install -r requirements.txt
	@rm -f $(VENV)/.installed*
	TORCH=$(TORCH) $(BIN)/python -m tools.install_torch --stamp $(STAMP)

$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(BIN)/python -m pip install -r requirements-dev.txt
	@touch $(DEV_STAMP)

## make lab: open the course in JupyterLab on 127.0.0.1 at lesson 00 (tools/lab.py)
lab: $(STAMP)
	$(BIN)/python -m tools.lab $(ROOT_FLAG)

## make test: the suite (unit, property, nbval, student copies, builds, lint); no browser
test: $(DEV_STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_XDIST) -m "not slow and not browser"

## make test-browser: the decks, pages and lesson 01 in JupyterLab, in headless
## Chromium (every slide measured, axe-core on every page and deck, the sliders)
test-browser: $(DEV_STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_XDIST) -m "browser and not slow"

## make test-slow: the slow runs (a JupyterHub class, nbgrader, the explorers of
## lessons 04, 07 and 09-13 in JupyterLab)
test-slow: $(DEV_STAMP) hub-proxy
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_XDIST) -m "slow and not zh"

## make test-zh: the Chinese edition's long runs: its 14 lessons under nbval in
## Chinese kernels (COURSE_LANG=zh), its decks measured as the English ones
test-zh: $(DEV_STAMP)
	$(TEST_ENV) $(BIN)/python -m pytest $(PYTEST_XDIST) -m zh

## make check: everything CI runs: make test, test-browser, test-slow, test-zh
check: test test-browser test-slow test-zh

## make notebooks: re-execute every lesson in a fresh kernel and store the outputs
notebooks: $(DEV_STAMP)
	$(BIN)/ruff format notebooks
	$(BIN)/python -m tools.execute_notebooks notebooks/[0-9]*.ipynb
	$(BIN)/python -m tools.coursebuild student

## make student: student copies (solutions stubbed, outputs cleared) in notebooks/student/
student: $(DEV_STAMP)
	$(BIN)/python -m tools.coursebuild student

## make slides: reveal.js decks and their handouts (PDF) in build/slides/, offline
slides: $(DEV_STAMP)
	$(BIN)/python -m tools.coursebuild slides

## make html: execute every lesson and export it to build/html/, offline assets
html: $(DEV_STAMP)
	$(BIN)/python -m tools.coursebuild html

# -- the Chinese edition (README.zh-CN.md): notebooks/zh/ is built from the English
# lessons and the catalogues locale/zh_CN/LC_MESSAGES/NN_*.po (tools/i18n.py).
# Targets of their own, not a LANG=zh variable: LANG is the locale variable of
# every recipe's shell.

## make lab-zh: the Chinese edition in JupyterLab, menus in Chinese, at lesson 00
lab-zh: $(STAMP)
	$(BIN)/python -m tools.lab --zh $(ROOT_FLAG)

## make extract-zh: new or changed English text into the catalogues (changed: fuzzy)
extract-zh: $(DEV_STAMP)
	$(BIN)/python -m tools.i18n extract

## make check-zh: what the catalogues still need (untranslated, fuzzy, markup, terms)
check-zh: $(DEV_STAMP)
	$(BIN)/python -m tools.i18n check

## make notebooks-zh: build notebooks/zh/ from the catalogues, run each (COURSE_LANG=zh)
notebooks-zh: $(DEV_STAMP)
	$(BIN)/python -m tools.i18n build
	$(BIN)/python -m tools.i18n student

## make student-zh: the Chinese student copies in notebooks/zh/student/
student-zh: $(DEV_STAMP)
	$(BIN)/python -m tools.i18n student

## make slides-zh: the Chinese decks and handouts in build/slides-zh/, offline
slides-zh: $(DEV_STAMP)
	COURSE_LANG=zh $(BIN)/python -m tools.i18n slides

## make html-zh: the Chinese lessons executed and exported to build/html-zh/
html-zh: $(DEV_STAMP)
	COURSE_LANG=zh $(BIN)/python -m tools.i18n html

.PHONY: hub hub-proxy

## make hub-proxy: configurable-http-proxy from npm (pinned in hub/package-lock.json)
hub-proxy: hub/node_modules/.installed

hub/node_modules/.installed: hub/package.json hub/package-lock.json
	npm ci --no-audit --no-fund --prefix hub
	@touch $@

## make hub: JupyterHub for a class on this machine, http://127.0.0.1:8000 (README)
hub: $(DEV_STAMP) hub-proxy
	$(BIN)/jupyterhub -f hub/jupyterhub_config.py

## make lint: ruff check, format check and codespell (make test runs them too)
lint: $(DEV_STAMP)
	$(BIN)/ruff check $(SOURCES)
	$(BIN)/ruff format --check $(SOURCES)
	$(BIN)/codespell README.md $(SOURCES)
	$(BIN)/python -m pytest -q tests/course/test_lint.py -k codespell_over_the_lessons

## make format: ruff format and fix
format: $(DEV_STAMP)
	$(BIN)/ruff format $(SOURCES)
	$(BIN)/ruff check --fix $(SOURCES)

## make clean: remove .venv, build/ and the caches
clean:
	rm -rf $(VENV) build test-artifacts *.egg-info .pytest_cache .ruff_cache .hypothesis
