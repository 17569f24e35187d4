"""The cost of engine.special's new kernels against torch's on the same inputs (one thread,
interleaved rounds, medians of thread CPU time). The engine's are vectorised NumPy loops over
series terms and shifts; this shows what that costs next to torch's C++ per-element code.

    .venv/bin/python bench/bench_special.py [--n 100000] [--rounds 7]

Each row is a median per call; "A/A" times the engine's lgamma twice under two names, so the
difference between those two rows is the noise of the machine."""

from __future__ import annotations

import argparse

import _common  # noqa: F401 - pins the thread pools before NumPy/torch load
import numpy as np
from _common import interleaved, try_torch

import engine
import engine.special


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    torch = try_torch()
    rng = np.random.default_rng(0)
    x = rng.uniform(-20, 50, args.n).astype(np.float32)
    p = rng.uniform(0, 1, args.n).astype(np.float32)
    a = rng.uniform(0.1, 50, args.n).astype(np.float32)
    ex, ep, ea = engine.tensor(x), engine.tensor(p), engine.tensor(a)
    ops = {
        "lgamma": (lambda lib, t: lib.lgamma(t), "x"),
        "digamma": (lambda lib, t: lib.digamma(t), "x"),
        "polygamma(3)": (lambda lib, t: lib.polygamma(3, t), "a"),
        "i0e": (lambda lib, t: lib.special.i0e(t), "x"),
        "ndtri": (lambda lib, t: lib.special.ndtri(t), "p"),
        "gammainc": (lambda lib, t: lib.special.gammainc(t, t * 1.1), "a"),
    }
    arrays = {"x": (ex, x), "p": (ep, p), "a": (ea, a)}
    candidates = {"engine lgamma (A)": lambda: engine.lgamma(ex), "engine lgamma (A/A)": lambda: engine.lgamma(ex)}
    for name, (fn, which) in ops.items():
        et, arr = arrays[which]
        candidates[f"engine {name}"] = lambda fn=fn, et=et: fn(engine, et)
        if torch is not None:
            tt = torch.from_numpy(arr)
            candidates[f"torch  {name}"] = lambda fn=fn, tt=tt: fn(torch, tt)
    times = interleaved(candidates, rounds=args.rounds, steps=1, warmup=1)
    print(f"n = {args.n} float32 elements, median of {args.rounds} rounds (thread CPU time)")
    for name, t in times.items():
        print(f"{name:24s} {t * 1e3:9.2f} ms  {t / args.n * 1e9:8.1f} ns/element")


if __name__ == "__main__":
    main()
