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

.PHONY: demo test lint setup dot chromium torch bench clean

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
	$(VENV)/bin/ruff check engine modscope tests examples bench

# The whole suite: engine, both capture backends, views, the parity tests against torch.
test: setup torch chromium lint
	$(VPY) -m pytest

bench: setup torch
	for b in bench/bench_*.py; do echo "== $$b"; $(VPY) $$b || exit 1; done

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis
