"""Shared fixtures. ``torch`` yields the real PyTorch (the oracle) or skips the test; ``lib`` is
the framework a test builds its models with, the bundled ``engine`` and then ``torch`` (skipped
when torch is not importable): a test that takes ``lib`` runs on both capture backends."""

from __future__ import annotations

import importlib
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402

BACKENDS = ("engine", "torch")


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")


@pytest.fixture(scope="session", params=BACKENDS)
def lib(request):
    """``engine`` or ``torch``: both have torch's API (``lib.nn.Linear``, ``lib.randn``, ...)."""
    if request.param == "torch":
        return pytest.importorskip("torch")
    return importlib.import_module(request.param)
