"""Activation checkpointing (``engine.utils.checkpoint``): what it saves and what it costs.

A stack of residual MLP blocks (``--blocks`` of width ``--width``, batch ``--batch``), each
block run plain, under ``checkpoint(use_reentrant=True)`` or under ``checkpoint(use_reentrant=
False)``:

- memory held between forward and backward: ``tracemalloc``'s current bytes after the forward
  minus before it (NumPy reports every array buffer to it; the graph's Python objects count too),
  the median over ``--reps`` repetitions; ``plain`` is measured twice (the A/A row);
- one training step (forward + backward): interleaved CPU-time medians (``_common.interleaved``),
  ``plain`` twice for the A/A row; and, when torch is installed, torch's own ratio for the same
  model (what checkpointing costs the oracle).

    .venv/bin/python bench/bench_checkpoint.py [--rounds 41] [--reps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402

import engine  # noqa: E402


def build(lib, blocks: int, width: int, mode: str):
    nn, checkpoint = lib.nn, __import__(lib.__name__ + ".utils.checkpoint", fromlist=["checkpoint"]).checkpoint

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(width, 2 * width), nn.Linear(2 * width, width)

        def forward(self, x):
            return x + self.b(lib.tanh(self.a(x)))

    class Stack(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(blocks))

        def forward(self, x):
            for blk in self.blocks:
                x = blk(x) if mode == "plain" else checkpoint(blk, x, use_reentrant=mode == "reentrant")
            return x

    return Stack()


def held_after_forward(lib, model, x, reps: int) -> float:
    """Median bytes the forward leaves allocated for backward (engine: tracemalloc)."""
    sizes = []
    for _ in range(reps):
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        out = model(x).sum()
        sizes.append(tracemalloc.get_traced_memory()[0] - before)
        tracemalloc.stop()
        out.backward()
        model.zero_grad()
    return statistics.median(sizes)


def step(model, x):
    def run() -> None:
        model(x).sum().backward()
        model.zero_grad()
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=8)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    data = np.random.default_rng(0).standard_normal((args.batch, args.width)).astype(np.float32)
    x = engine.tensor(data, requires_grad=True)
    modes = ["plain", "plain (A/A)", "reentrant", "non-reentrant"]
    models = {m: build(engine, args.blocks, args.width, m.split()[0]) for m in modes}

    print(f"{args.blocks} residual blocks {args.width}-{2 * args.width}-{args.width}, batch {args.batch}")
    print("\nheld between forward and backward (engine, tracemalloc, median of reps):")
    plain_mem = held_after_forward(engine, models["plain"], x, args.reps)
    for m in modes:
        mem = held_after_forward(engine, models[m], x, args.reps)
        print(f"  {m:15s} {mem / 2**20:8.2f} MiB   x{mem / plain_mem:.3f} of plain")

    print(f"\nstep time (forward+backward, CPU time, median of {args.rounds} interleaved rounds):")
    times = _common.interleaved({m: step(models[m], x) for m in modes}, rounds=args.rounds, steps=1)
    for m in modes:
        print(f"  {m:15s} {times[m] * 1e3:8.2f} ms   x{times[m] / times['plain']:.3f} of plain")

    torch = _common.try_torch()
    if torch is None:
        print("\ntorch not installed: no oracle ratio")
        return
    tx = torch.tensor(data, requires_grad=True)
    tmodels = {m: build(torch, args.blocks, args.width, m.split()[0]) for m in modes}
    ttimes = _common.interleaved({m: step(tmodels[m], tx) for m in modes}, rounds=args.rounds, steps=1)
    print("\ntorch, same model (its own checkpoint cost):")
    for m in modes:
        print(f"  {m:15s} {ttimes[m] * 1e3:8.2f} ms   x{ttimes[m] / ttimes['plain']:.3f} of plain")


if __name__ == "__main__":
    main()
