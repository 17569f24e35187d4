"""Loading the bundled MNIST digits (modscope/examples/data/mnist_5k.npz, see data/README.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent / "data" / "mnist_5k.npz"


def load_mnist(n_train: int = 4000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Shuffled digits as float32 in [0, 1], shape [N, 1, 28, 28], and int64 labels:
    ``(x_train, y_train, x_test, y_test)``. The file is sorted by class, so it is shuffled
    with ``seed`` before the split."""
    if not DATA.exists():
        raise FileNotFoundError(f"MNIST data not found at {DATA}: the project ships it in modscope/examples/data/")
    with np.load(DATA) as f:
        images, labels = f["images"], f["labels"]
    order = np.random.default_rng(seed).permutation(len(images))
    x = (images[order].astype(np.float32) / 255.0)[:, None, :, :]
    y = labels[order].astype(np.int64)
    return x[:n_train], y[:n_train], x[n_train:], y[n_train:]
