"""Shared benchmark plumbing: one BLAS thread everywhere, interleaved rounds, medians.

Import this module before NumPy or torch: it pins the thread pools through the environment."""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import random  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402


def interleaved(candidates: dict[str, Callable[[], object]], rounds: int, steps: int,
                warmup: int = 3, clock: Callable[[], float] = time.thread_time) -> dict[str, float]:
    """Median seconds per call of each candidate, alternating candidates round by round so that
    machine noise hits all of them alike. Each round runs them in a new (seeded) random order, so
    every candidate runs after every other about equally often: what one leaves in the caches
    and the allocator for the next (one trace frees its activations earlier than another) is no
    systematic edge for any of them.

    The default clock is this thread's CPU time: with one BLAS thread all the work runs here, and
    time spent waiting while other processes hold the CPU is left out (on a shared 2-core machine
    that waiting, not the code, dominates wall-clock spread). Pass ``time.perf_counter`` for wall
    time."""
    for fn in candidates.values():
        for _ in range(warmup):
            fn()
    samples: dict[str, list[float]] = {name: [] for name in candidates}
    order, shuffle = list(candidates.items()), random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name, fn in order:
            start = clock()
            for _ in range(steps):
                fn()
            samples[name].append((clock() - start) / steps)
    return {name: statistics.median(s) for name, s in samples.items()}


def try_torch():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(1)
    return torch


def median_time(fn: Callable[[], object], rounds: int) -> tuple[float, object]:
    """The median wall-clock seconds of ``rounds`` calls of ``fn`` after one warm-up call, and
    the last call's result (the diagram benchmarks: one thing timed at a time)."""
    fn()  # warm-up (imports, caches)
    times, result = [], None
    for _ in range(rounds):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result
