"""conv2d and max_pool2d forward+backward at the shapes of the classic MNIST ``Net`` (batch 64,
float32): the engine against torch CPU, interleaved, one BLAS/torch thread each.

Cases: conv1 (1->10, 5x5) needs no input gradient (the data), conv2 (10->20, 5x5) does; the two
2x2 max pools follow them. Each call runs the op forward, then backward from a fixed gradient.

Run: ``.venv/bin/python bench/bench_conv_net.py`` (``--rounds`` for more samples)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402

import engine  # noqa: E402

BATCH = 64
CASES = {
    # name: (op, input shape, weight shape or None, input needs grad)
    "conv1 1->10 5x5": ("conv2d", (BATCH, 1, 28, 28), (10, 1, 5, 5), False),
    "conv2 10->20 5x5": ("conv2d", (BATCH, 10, 12, 12), (20, 10, 5, 5), True),
    "max_pool2d 2 (10x24x24)": ("max_pool2d", (BATCH, 10, 24, 24), None, True),
    "max_pool2d 2 (20x8x8)": ("max_pool2d", (BATCH, 20, 8, 8), None, True),
}


def make_call(lib, op: str, x_shape, w_shape, x_grad: bool):
    """A closure running ``op`` forward and backward on ``lib`` (engine or torch)."""
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal(x_shape).astype(np.float32), requires_grad=x_grad)
    F = lib.nn.functional
    if op == "conv2d":
        w = lib.tensor(rng.standard_normal(w_shape).astype(np.float32) * 0.1, requires_grad=True)
        b = lib.tensor(np.zeros(w_shape[0], np.float32), requires_grad=True)
        out_shape = (x_shape[0], w_shape[0], x_shape[2] - w_shape[2] + 1, x_shape[3] - w_shape[3] + 1)
        grad = lib.tensor(rng.standard_normal(out_shape).astype(np.float32))
        params = [w, b] + ([x] if x_grad else [])

        def call():
            for p in params:
                p.grad = None
            F.conv2d(x, w, b).backward(grad)
    else:
        grad = lib.tensor(rng.standard_normal(x_shape[:2] + (x_shape[2] // 2, x_shape[3] // 2)).astype(np.float32))

        def call():
            x.grad = None
            F.max_pool2d(x, 2).backward(grad)

    return call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch = _common.try_torch()
    print(f"batch {BATCH}, float32, medians of {args.rounds} rounds x {args.steps} calls (forward+backward)")
    print(f"{'case':<26}{'engine ms':>11}{'torch ms':>11}{'engine/torch':>14}")
    for name, (op, x_shape, w_shape, x_grad) in CASES.items():
        candidates = {"engine": make_call(engine, op, x_shape, w_shape, x_grad)}
        if torch is not None:
            candidates["torch"] = make_call(torch, op, x_shape, w_shape, x_grad)
        med = _common.interleaved(candidates, args.rounds, args.steps)
        t_ms = med.get("torch", float("nan")) * 1e3
        e_ms = med["engine"] * 1e3
        print(f"{name:<26}{e_ms:>11.3f}{t_ms:>11.3f}{e_ms / t_ms:>14.2f}")


if __name__ == "__main__":
    main()
