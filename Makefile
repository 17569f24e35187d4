# Two entry points (see README): `make demo` and `make test`. Each sets up what it needs.
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
STAMP   := $(VENV)/.installed
# A CPU build of torch: the parity oracle and the torch backend's test target. modscope's torch
# backend is an optional extra (pip install 'modscope[torch]'); `make demo` never needs it.
TORCH   ?= torch==2.13.0
# Peers the parity tests compare with (tests only; modscope never imports them).
PEERS   ?= torchinfo==1.8.0

# The installed wheel's smoke suite (tests/packaging/smoke) runs in venvs of its own: the newest
# dependency versions with every extra, then the lowest that pyproject.toml allows.
WHEELS       := build/wheels
SMOKE_VENV   := .venv-smoke
FLOORS_VENV  := .venv-floors
SMOKE_TESTS  := pytest pytest-timeout
# Other interpreters `make test-pythons` runs the suite on (without torch: its wheel here is for 3.11).
PYTHONS      ?= 3.12 3.13

.PHONY: demo test lint setup dot chromium torch bench bench-zoo clean wheel smoke smoke-floors test-pythons

$(STAMP): pyproject.toml
	@$(PY) -c 'import sys; assert sys.version_info >= (3, 11), "modscope needs Python 3.11+, found " + sys.version.split()[0]'
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	# PYTHONWARNINGS: setuptools prints a generic tip about editable installs of a flat layout
	# ("be careful with folders in your working directory..."): noise on every first install.
	PYTHONWARNINGS=ignore $(VPY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP) dot

# The graphviz `dot` binary comes from Debian's `graphviz` package.
dot:
	@if command -v dot >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing graphviz (dot) from Debian's packages..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq graphviz >/dev/null; \
	else \
		echo "The graphviz 'dot' binary is missing. Install it with: sudo apt-get install graphviz"; exit 1; \
	fi

# Debian's headless chromium: the browser tests (the report page, `modscope web`) drive it with
# Playwright's Python package (never `playwright install`: that downloads a browser of its own).
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "Installing chromium from Debian's packages (for the browser tests)..."; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else \
		echo "chromium is missing: the browser tests will be skipped. Install it with: sudo apt-get install chromium"; \
	fi

torch: $(STAMP)
	@$(VPY) -c 'import torch' 2>/dev/null || $(VPY) -m pip install --quiet $(TORCH)
	@$(VPY) -c 'import torchinfo' 2>/dev/null || $(VPY) -m pip install --quiet --no-deps $(PEERS)

# The main job: train the classic MNIST Net on the bundled digits and watch it live.
demo: setup
	$(VENV)/bin/modscope demo

lint: $(STAMP)
	$(VENV)/bin/ruff check engine modscope tests bench scripts

# The whole suite: engine, both capture backends, views, the parity tests against torch; then the
# wheel as a user installs it, with the newest and with the lowest dependency versions allowed.
test: setup torch chromium lint
	$(VPY) -m pytest
	$(MAKE) --no-print-directory smoke smoke-floors

# The wheel, built from the clone (an earlier build's egg-info would add files to it: removed first).
wheel: $(STAMP)
	rm -rf $(WHEELS) modscope.egg-info
	$(VPY) -m build --no-isolation --wheel --outdir $(WHEELS) . >/dev/null

# The smoke suite runs from its own folder, so `import modscope` finds the install, not the clone.
smoke: wheel dot
	@test -x $(SMOKE_VENV)/bin/python || $(PY) -m venv $(SMOKE_VENV)
	$(SMOKE_VENV)/bin/pip install --quiet --force-reinstall --no-deps $(WHEELS)/*.whl
	$(SMOKE_VENV)/bin/pip install --quiet "$$(ls $(WHEELS)/*.whl)[torch,notebook,web]" $(TORCH) $(SMOKE_TESTS)
	cd tests/packaging/smoke && ../../../$(SMOKE_VENV)/bin/python -m pytest

smoke-floors: wheel dot
	@test -x $(FLOORS_VENV)/bin/python || $(PY) -m venv $(FLOORS_VENV)
	$(FLOORS_VENV)/bin/pip install --quiet --force-reinstall --no-deps $(WHEELS)/*.whl
	$(FLOORS_VENV)/bin/pip install --quiet "$$(ls $(WHEELS)/*.whl)[notebook,web]" \
		$$($(VPY) scripts/dependency_floors.py --extras notebook,web) $(SMOKE_TESTS)
	cd tests/packaging/smoke && ../../../$(FLOORS_VENV)/bin/python -m pytest

# The suite on each of $(PYTHONS) (pyenv's interpreters where `pythonX.Y` is not on PATH), editable,
# without torch (the torch tests skip); by hand, not in CI.
test-pythons:
	@for v in $(PYTHONS); do \
		py=$$(command -v python$$v >/dev/null && python$$v -c 'import sys; print(sys.executable)' 2>/dev/null \
			|| ls -d $$HOME/.pyenv/versions/$$v*/bin/python$$v 2>/dev/null | tail -1); \
		if [ -z "$$py" ]; then echo "no Python $$v found"; exit 1; fi; \
		echo "== Python $$v: $$py"; \
		test -x .venv-py$$v/bin/python || $$py -m venv .venv-py$$v || exit 1; \
		PYTHONWARNINGS=ignore .venv-py$$v/bin/pip install --quiet -e '.[dev]' || exit 1; \
		.venv-py$$v/bin/python -m pytest -p no:cacheprovider || exit 1; \
	done

bench: setup torch
	for b in bench/bench_*.py; do echo "== $$b"; $(VPY) $$b || exit 1; done

# Real models (bench/bench_zoo.py) in their own venv: torchvision needs torch 2.14.1 here (~5.5 GB, x86_64).
bench-zoo:
	bash scripts/zoo_venv.sh
	OMP_NUM_THREADS=1 .venv-zoo/bin/python bench/bench_zoo.py

clean:
	rm -rf $(VENV) $(SMOKE_VENV) $(FLOORS_VENV) .venv-py3.* .venv-zoo build modscope.egg-info .pytest_cache .ruff_cache .hypothesis
