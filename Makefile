# Two commands matter on a fresh machine (see README):
#   make run   - create .venv, install Nocturne, launch the window
#   make test  - create .venv, install Nocturne + test tools, build/reuse the local model engine
#                and its two test opponents (engine-extras), lint, type-check the core, run the
#                whole test suite, start the window on a real X display (Xvfb), then build (or
#                reuse) the one-folder binary dist/Nocturne/ and run its offscreen self-test and
#                the same real-display check, then build (or reuse) the .deb and .tar.gz packages
#                and install, start and remove them (package-check)
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DIST_STAMP := $(VENV)/.installed-dist

.PHONY: run test test-fast lint engine engine-extras bench clean dist smoke xvfb-smoke
.PHONY: package package-check

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
# second server type (llama-cpp-python's own server, on llama-server's shared libraries)
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

# the suite on two workers (pytest-xdist): the tests of each real model server stay together in
# one worker, and the longest work goes first (tests/xdist_groups.py), so the servers and the
# quick tests share the two cores and neither worker ends alone on a long test
TEST_WORKERS ?= 2
test: lint engine engine-extras
	QT_QPA_PLATFORM=offscreen NOCTURNE_REQUIRE_ENGINE=1 $(BIN)/python -m pytest -q \
	  -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder -p tests.xdist_groups
	$(MAKE) xvfb-smoke
	$(MAKE) smoke
	$(MAKE) package-check

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

# build/package/: the .deb (/opt/nocturne, /usr/bin/nocturne, menu entry, icons, metainfo) and
# the .tar.gz (install.sh per user under ~/.local), both the frozen folder + the engine pack
package: dist engine
	$(BIN)/python scripts/package.py build

# install the .deb (as root, where dpkg exists), start it from its menu entry under Xvfb,
# self-test, remove it, memory untouched; then the .tar.gz's install.sh/uninstall.sh per user
package-check: package
	$(BIN)/python scripts/package_check.py

bench: $(STAMP)
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
