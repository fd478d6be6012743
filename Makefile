# The README's two commands: `make lab` and `make test`.
# Both create .venv when it is missing and install requirements.txt into it.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# JupyterLab refuses to run as root unless told; pass the flag only then.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test notebooks student slides html lint format venv clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -r requirements.txt
	@touch $(STAMP)

## make lab: open the course in JupyterLab on 127.0.0.1 (token auth stays on)
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=notebooks \
		$(ROOT_FLAG) notebooks/00_start_here.ipynb

## make test: unit, property and notebook tests (nbval), lint
test: $(STAMP)
	$(BIN)/python -m pytest

## make notebooks: re-execute every lesson in a fresh kernel and store the outputs
notebooks: $(STAMP)
	$(BIN)/ruff format notebooks
	$(BIN)/python tools/execute_notebooks.py notebooks/[0-9]*.ipynb
	$(BIN)/python tools/coursebuild.py student

## make student: student copies (solutions stubbed, outputs cleared) in notebooks/student/
student: $(STAMP)
	$(BIN)/python tools/coursebuild.py student

## make slides: reveal.js decks in build/slides/ that work offline
slides: $(STAMP)
	$(BIN)/python tools/coursebuild.py slides

## make html: execute every lesson and export it to build/html/, offline assets
html: $(STAMP)
	$(BIN)/python tools/coursebuild.py html

lint: $(STAMP)
	$(BIN)/ruff check helpers tests notebooks tools benchmarks
	$(BIN)/ruff format --check helpers tests notebooks tools benchmarks

format: $(STAMP)
	$(BIN)/ruff format helpers tests notebooks tools benchmarks
	$(BIN)/ruff check --fix helpers tests notebooks tools benchmarks

clean:
	rm -rf $(VENV) build test-artifacts *.egg-info .pytest_cache .ruff_cache .hypothesis
