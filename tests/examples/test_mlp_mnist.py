"""Smoke test: the MLP example trains on the bundled digits and learns."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "modscope" / "examples"))

import mlp_mnist  # noqa: E402
from _mnist import load_mnist  # noqa: E402


def test_bundled_data_loads_shuffled():
    xtr, ytr, xte, yte = load_mnist()
    assert xtr.shape == (4000, 1, 28, 28) and xte.shape == (1000, 1, 28, 28)
    assert xtr.dtype.name == "float32" and 0.0 <= xtr.min() and xtr.max() <= 1.0
    assert set(ytr[:100].tolist()) != {ytr[0]}  # shuffled: the file itself is sorted by class


def test_mlp_learns(capsys):
    accuracy = mlp_mnist.main(["--epochs", "2"])
    assert accuracy > 0.8
    assert "epoch 2" in capsys.readouterr().out
