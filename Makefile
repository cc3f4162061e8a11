# Two entry points for a fresh machine: `make site` and `make test`. Both create .venv when missing.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup site test check typecheck verify test-repro vsix clean

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

# The browser worker and the search script under Node (each worker case also through the CLI), then pytest.
# Three pytest workers on two cores: a minute and a half of tests wait on Slurm's daemons and the
# browsers, and a third worker keeps both cores busy meanwhile; worksteal hands the last tests to
# whichever worker is idle instead of leaving them queued behind a slow one.
test: $(STAMP)
	NANOPEDIA_PYTHON=$(BIN)/python node --test tests/js/
	$(BIN)/python -m pytest -n 3 --dist worksteal

# mypy over the package by its import name, found in generator/ (generator/nanopedia/).
typecheck: $(STAMP)
	MYPYPATH=generator $(BIN)/mypy -p nanopedia

# The pinned repro environment (pyproject's `repro` extra), then every entry's repros and examples.
REPRO := .venv-repro
$(REPRO)/.installed: pyproject.toml
	test -x $(REPRO)/bin/python || $(PY) -m venv $(REPRO)
	$(REPRO)/bin/python -m pip install --quiet --upgrade pip
	$(REPRO)/bin/python -m pip install --quiet -e '.[repro]'
	touch $(REPRO)/.installed

verify: $(REPRO)/.installed
	$(REPRO)/bin/nanopedia verify

# The tests that need torch and Lightning (tests/repro/: torchrun under `nanopedia run`, the
# Lightning callback), run by the test venv's pytest against the repro venv; required here, so a
# missing interpreter or package fails them instead of skipping them.
test-repro: $(STAMP) $(REPRO)/.installed
	NANOPEDIA_REQUIRE_REPRO=1 NANOPEDIA_REPRO_PYTHON=$(REPRO)/bin/python $(BIN)/python -m pytest tests/repro

# The VS Code extension (editors/vscode/): the site's engine, data and entry pages copied in from a
# fresh build of the entries, packaged by the pinned vsce (under a pinned Node 24, both installed
# into .cache/editor/) into dist/nanopedia-<version>.vsix.
vsix: $(STAMP)
	$(BIN)/python editors/vscode/vsix.py

clean:
	rm -rf site dist .nanopedia-cache editors/vscode/engine editors/vscode/.build editors/vscode/LICENSE
