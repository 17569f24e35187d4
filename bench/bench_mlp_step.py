"""One MLP training step (784-256-10, batch 128, float32, SGD written with tensor ops): the
engine against the same step hand-written in NumPy and against torch CPU, interleaved, one BLAS
thread each. Also the graph bookkeeping cost per op on a 10,000-op chain.

Run: ``.venv/bin/python bench/bench_mlp_step.py`` (``--rounds`` for more samples)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402

import engine  # noqa: E402

BATCH, IN, HIDDEN, OUT, LR = 128, 784, 256, 10, 0.05


def make_data(seed: int = 0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((BATCH, IN)).astype(np.float32)
    y = rng.integers(0, OUT, BATCH).astype(np.int64)
    w1 = (rng.standard_normal((IN, HIDDEN)) * 0.05).astype(np.float32)
    w2 = (rng.standard_normal((HIDDEN, OUT)) * 0.05).astype(np.float32)
    return x, y, [w1, np.zeros(HIDDEN, np.float32), w2, np.zeros(OUT, np.float32)]


def step_with(lib, x, y, params):
    """The step as a torch user writes it; runs unchanged on engine and torch."""
    w1, b1, w2, b2 = params
    logits = (x @ w1 + b1).relu() @ w2 + b2
    loss = -logits.log_softmax(1).gather(1, y.unsqueeze(1)).mean()
    for p in params:
        p.grad = None
    loss.backward()
    with lib.no_grad():
        for p in params:
            p -= LR * p.grad
    return loss


def numpy_step(x, y, params):
    """The same step with the backward written out by hand."""
    w1, b1, w2, b2 = params
    h_pre = x @ w1 + b1
    h = np.maximum(h_pre, 0)
    logits = h @ w2 + b2
    shifted = logits - logits.max(1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(1, keepdims=True))
    loss = -logp[np.arange(BATCH), y].mean()
    g_logits = np.exp(logp)
    g_logits[np.arange(BATCH), y] -= 1
    g_logits /= BATCH
    g_w2 = h.T @ g_logits
    g_b2 = g_logits.sum(0)
    g_h = g_logits @ w2.T
    g_h *= h_pre > 0
    g_w1 = x.T @ g_h
    g_b1 = g_h.sum(0)
    for p, g in zip(params, (g_w1, g_b1, g_w2, g_b2)):
        p -= LR * g
    return loss


def chain_cost(n: int = 10_000) -> dict[str, float]:
    """Microseconds per op for a chain of n scalar multiplications: forward with graph
    recording, backward, and the same multiplications in plain NumPy (the compute floor)."""
    x = engine.ones(1, requires_grad=True)
    start = time.perf_counter()
    y = x
    for _ in range(n):
        y = y * 1.0001
    forward = time.perf_counter() - start
    start = time.perf_counter()
    y.backward()
    backward = time.perf_counter() - start
    a = np.ones(1, np.float32)
    start = time.perf_counter()
    for _ in range(n):
        a = a * 1.0001
    plain = time.perf_counter() - start
    return {"forward_us": forward / n * 1e6, "backward_us": backward / n * 1e6, "numpy_us": plain / n * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()

    x, y, init = make_data()
    e_params = [engine.tensor(p, requires_grad=True) for p in init]
    ex, ey = engine.from_numpy(x), engine.from_numpy(y)
    n_params = [p.copy() for p in init]
    candidates = {
        "engine": lambda: step_with(engine, ex, ey, e_params),
        "numpy": lambda: numpy_step(x, y, n_params),
    }
    torch = _common.try_torch()
    if torch is not None:
        t_params = [torch.tensor(p, requires_grad=True) for p in init]
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        candidates["torch"] = lambda: step_with(torch, tx, ty, t_params)

    medians = _common.interleaved(candidates, args.rounds, args.steps)
    print(f"MLP step 784-256-10, batch {BATCH}, float32, 1 thread; median of {args.rounds} rounds x "
          f"{args.steps} steps")
    for name, sec in medians.items():
        print(f"  {name:7s} {sec * 1e6:8.0f} us/step")
    print(f"  engine / numpy = {medians['engine'] / medians['numpy']:.3f}")
    if "torch" in medians:
        print(f"  engine / torch = {medians['engine'] / medians['torch']:.3f}")
    chain = [chain_cost() for _ in range(5)]
    med = {k: sorted(c[k] for c in chain)[2] for k in chain[0]}
    print("10,000-op chain (y = y * 1.0001 on a 1-element tensor), median of 5:")
    print(f"  forward {med['forward_us']:.2f} us/op, backward {med['backward_us']:.2f} us/op, "
          f"plain NumPy {med['numpy_us']:.2f} us/op -> bookkeeping "
          f"{med['forward_us'] + med['backward_us'] - med['numpy_us']:.2f} us/op")


if __name__ == "__main__":
    main()
