# Two commands matter on a fresh machine (see README):
#   make run   - create .venv, install Nocturne, launch the window
#   make test  - create .venv, install Nocturne + test tools, build/reuse the local model engine,
#                lint, type-check the core and run the whole test suite
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint engine bench clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/nocturne

engine: $(STAMP)
	$(BIN)/python scripts/local-engine build

lint: $(STAMP)
	$(BIN)/ruff check nocturne_desktop tests bench scripts
	$(BIN)/mypy

test: lint engine
	QT_QPA_PLATFORM=offscreen NOCTURNE_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q

test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m "not engine and not slow"

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
