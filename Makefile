# Two commands matter on a fresh machine (see README):
#   make run   - create .venv, install Nocturne, launch the window
#   make test  - create .venv, install Nocturne + test tools, build/reuse the local model engine
#                and its two test opponents (engine-extras), lint, type-check the core, run the
#                whole test suite, start the window on a real X display (Xvfb), then build (or
#                reuse) the one-folder binary dist/Nocturne/ and run its offscreen self-test and
#                the same real-display check
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DIST_STAMP := $(VENV)/.installed-dist

.PHONY: run test test-fast lint engine engine-extras bench clean dist smoke xvfb-smoke

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $(STAMP)

run: $(STAMP)
	$(BIN)/nocturne

engine: $(STAMP)
	$(BIN)/python scripts/local-engine build

# the test suite's opponents, cached beside the engine: a second model (Gemma 3 270M base) and a
# second server type (llama-cpp-python's own server, which compiles llama.cpp once more)
engine-extras: $(STAMP)
	$(BIN)/python scripts/local-engine build --extra gemma3-270m --extra llama-cpp-python-server

# the real Letta server (letta[server,sqlite]==0.11.7, the last release on SQLite) in a venv in the
# user cache, for the tests of the Letta link; installed once, then reused (docs/letta.md)
.PHONY: letta
letta: $(STAMP)
	$(BIN)/python scripts/letta-server build

# make test installs it and fails (instead of skipping) the tests marked letta without it
test: letta
test: export NOCTURNE_REQUIRE_LETTA := 1

lint: $(STAMP)
	$(BIN)/ruff check nocturne_desktop tests bench scripts
	$(BIN)/mypy

test: lint engine engine-extras
	QT_QPA_PLATFORM=offscreen NOCTURNE_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q
	$(MAKE) xvfb-smoke
	$(MAKE) smoke

# the source app on Qt's real xcb platform under Xvfb: paints, screenshot checked, quits
# (installs Xvfb and the xcb libraries with apt-get when run as root; skipped otherwise)
xvfb-smoke: $(STAMP)
	$(BIN)/python scripts/xvfb_smoke.py source --keep build/screenshots

test-fast: $(STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python -m pytest -q -m "not engine and not slow"

$(DIST_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -q -e '.[test,dist]'
	@touch $(DIST_STAMP)

# dist/Nocturne/ (PyInstaller, nocturne.spec); reused when built from the same sources
dist: $(DIST_STAMP)
	$(BIN)/python scripts/dist.py build

# the frozen binary's self-test: offscreen window, demo memory, rules-only sleep, undo;
# then the same binary on the real xcb platform under Xvfb (as xvfb-smoke)
smoke: $(DIST_STAMP)
	QT_QPA_PLATFORM=offscreen $(BIN)/python scripts/dist.py smoke
	$(BIN)/python scripts/xvfb_smoke.py frozen --keep build/screenshots

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
