"""Shared fixtures. ``torch`` yields the real PyTorch (the oracle) or skips the test."""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def torch():
    return pytest.importorskip("torch")
