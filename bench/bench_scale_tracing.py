"""Tracing cost at scale, by hand (issue 21): the model of 2,500 blocks of
[Linear(8, 8), ReLU, LayerNorm(8), Identity] in one ``Sequential`` (10,001 modules, 40,006 module
events a step), batch 2, SGD, one BLAS thread, on the engine.

Candidates run interleaved round by round (``_common.interleaved``, thread CPU time): untraced
twice (the A/A row), four no-op hooks on every module (the engine's hook floor), and
``modscope.trace`` with ``stats=False`` and ``stats=True`` (bounded in memory, as a long run is).
Also the time to attach a trace (``start``) and to detach it (``stop``), medians of a few runs.

Run: ``.venv/bin/python bench/bench_scale_tracing.py [--rounds 7] [--blocks 2500]``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402
from bench_tracing import add_noop_hooks  # noqa: E402

import engine  # noqa: E402
import modscope  # noqa: E402


def wide_model(blocks: int) -> engine.nn.Module:
    layers: list[engine.nn.Module] = []
    for _ in range(blocks):
        layers += [engine.nn.Linear(8, 8), engine.nn.ReLU(), engine.nn.LayerNorm(8), engine.nn.Identity()]
    return engine.nn.Sequential(*layers)


def make_step(blocks: int, noop_hooks: bool = False, **trace_kw):
    engine.manual_seed(0)
    model = wide_model(blocks)
    opt = engine.optim.SGD(model.parameters(), lr=1e-3)
    x = engine.from_numpy(np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32))
    if noop_hooks:
        add_noop_hooks(model)
    trace = modscope.trace(model, max_events=200_000, **trace_kw).start() if trace_kw else None

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        if trace is not None:
            trace.step()
    return step, trace


def attach_times(blocks: int, runs: int) -> tuple[float, float]:
    model = wide_model(blocks)
    starts, stops = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        tr = modscope.trace(model, max_events=200_000).start()
        t1 = time.perf_counter()
        tr.stop()
        starts.append(t1 - t0)
        stops.append(time.perf_counter() - t1)
    return statistics.median(starts), statistics.median(stops)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--blocks", type=int, default=2500)
    args = parser.parse_args()
    candidates, traces = {}, []
    for name, kw in (("untraced", {}), ("untraced again", {}), ("no-op hooks", {"noop_hooks": True}),
                     ("stats=False", {"stats": False}), ("stats=True", {"stats": True})):
        candidates[name], trace = make_step(args.blocks, **kw)
        if trace is not None:
            traces.append(trace)
    med = _common.interleaved(candidates, args.rounds, 1, warmup=2)
    for tr in traces:
        tr.stop()
    base = med["untraced"]
    print(f"{args.blocks} blocks ({4 * args.blocks + 1} modules), batch 2, 1 thread; "
          f"median of {args.rounds} rounds")
    for name, sec in med.items():
        print(f"  {name:15s} {sec * 1e3:8.1f} ms/step   x{sec / base:.3f}")
    start, stop = attach_times(args.blocks, 5)
    print(f"  attach (start) {start * 1e3:8.1f} ms   detach (stop) {stop * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
