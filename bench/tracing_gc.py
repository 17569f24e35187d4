"""What a trace costs in Python's garbage collections: collections per step of each generation
and the time spent in them (``gc.callbacks``), for the seed MNIST ``Net`` step (batch 64, eval
mode) untraced and under ``modscope.trace(model)``, each in its own loop after a warm-up.

Every object a trace keeps past the step (its recorded events) counts towards the next
young-generation collection, and in a training step that collection lands in the middle of a
forward or a backward, where the autograd graph makes the young generation large (~100 µs each
on this machine, against ~10 µs between steps). ``bench_tracing.py`` reports medians of single
steps, which these collections (a few percent of the steps) do not move; a whole run pays them,
as ``bench_tui.py``'s throughput does. A diagnostic, not run by ``make bench``.

Run: ``.venv/bin/python bench/tracing_gc.py [--steps 1000] [--stats]``.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "modscope" / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402,F401  (pins BLAS threads before NumPy loads)
from bench_tracing import net_step  # noqa: E402


class CollectionTimer:
    """Counts the collections of each generation and the time inside them."""

    def __init__(self) -> None:
        self.count = [0, 0, 0]
        self.ns = [0, 0, 0]
        self._start = 0

    def __call__(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._start = time.perf_counter_ns()
        else:
            self.count[info["generation"]] += 1
            self.ns[info["generation"]] += time.perf_counter_ns() - self._start


def measure(traced: bool, stats: bool, steps: int) -> CollectionTimer:
    step, trace = net_step(stats=stats) if traced else net_step()
    for _ in range(50):
        step()
    timer = CollectionTimer()
    gc.callbacks.append(timer)
    try:
        for _ in range(steps):
            step()
    finally:
        gc.callbacks.remove(timer)
        if trace is not None:
            trace.stop()
    return timer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--stats", action="store_true", help="trace with stats=True")
    args = parser.parse_args()
    print(f"Net step, {args.steps} steps after 50 of warm-up; collections per 100 steps (generation 0/1/2), "
          "time in collections per step")
    for name, traced in (("untraced", False), (f"stats={args.stats}", True)):
        t = measure(traced, args.stats, args.steps)
        per100 = "/".join(f"{100 * c / args.steps:.1f}" for c in t.count)
        print(f"  {name:12s} {per100:>15s}   {sum(t.ns) / args.steps / 1e3:6.1f} µs/step")


if __name__ == "__main__":
    main()
