# Two entry points for a fresh machine: `make site` and `make test`. Both create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup site test check clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# A contributor's one command: the venv, then the pre-commit hooks (check on entries, ruff on code).
setup: $(STAMP)
	$(BIN)/python -m pip install --quiet pre-commit
	$(BIN)/pre-commit install

site: $(STAMP)
	$(BIN)/nanopedia build

check: $(STAMP)
	$(BIN)/nanopedia check

test: $(STAMP)
	$(BIN)/python -m pytest -n 2

clean:
	rm -rf site dist .nanopedia-cache
