"""Tracing cost at scale, by hand (issue 21): the model of 2,500 blocks of
[Linear(8, 8), ReLU, LayerNorm(8), Identity] in one ``Sequential`` (10,001 modules, 40,006 module
events a step), batch 2, SGD, one BLAS thread, on the engine (or, with ``--backend torch``, the
same model in PyTorch: the oracle's own cost for the same hooks, and modscope's torch backend).

Candidates (each in a process of its own, see ``main``; thread CPU time): untraced twice (the A/A
row), four no-op hooks on every module (the engine's hook floor), and ``modscope.trace`` with
``stats=False`` and ``stats=True`` (bounded in memory, as a long run is).
Also the time to attach a trace (``start``) and to detach it (``stop``), medians of a few runs.

Run: ``.venv/bin/python bench/bench_scale_tracing.py [--rounds 3] [--steps 5] [--blocks 2500]
[--no-gc] [--backend engine|torch]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402,F401  (pins BLAS threads before NumPy loads)
import numpy as np  # noqa: E402
from bench_tracing import add_noop_hooks  # noqa: E402

import engine  # noqa: E402
import modscope  # noqa: E402


def framework(backend: str):
    """``engine``, or ``torch`` (one thread)."""
    if backend == "engine":
        return engine
    torch = _common.try_torch()
    if torch is None:
        sys.exit("--backend torch needs PyTorch: .venv/bin/pip install torch")
    return torch


def wide_model(blocks: int, fw=engine):
    nn = fw.nn
    layers = []
    for _ in range(blocks):
        layers += [nn.Linear(8, 8), nn.ReLU(), nn.LayerNorm(8), nn.Identity()]
    return nn.Sequential(*layers)


def add_plain_noop_hooks(model) -> None:
    """The same four hooks as ``add_noop_hooks``, without the engine's ``transparent_hook`` mark."""
    for module in model.modules():
        module.register_forward_pre_hook(lambda *a: None, prepend=True)
        module.register_forward_hook(lambda *a: None, always_call=True)
        module.register_full_backward_pre_hook(lambda *a: None, prepend=True)
        module.register_full_backward_hook(lambda *a: None)


def make_step(blocks: int, noop_hooks: bool = False, fw=engine, **trace_kw):
    fw.manual_seed(0)
    model = wide_model(blocks, fw)
    opt = fw.optim.SGD(model.parameters(), lr=1e-3)
    x = fw.from_numpy(np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32))
    if noop_hooks:
        (add_noop_hooks if fw is engine else add_plain_noop_hooks)(model)
    trace = modscope.trace(model, max_events=200_000, **trace_kw).start() if trace_kw else None

    def step():
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
        if trace is not None:
            trace.step()
    return step, trace


def attach_times(blocks: int, runs: int, fw=engine) -> tuple[float, float]:
    model = wide_model(blocks, fw)
    starts, stops = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        tr = modscope.trace(model, max_events=200_000).start()
        t1 = time.perf_counter()
        tr.stop()
        starts.append(t1 - t0)
        stops.append(time.perf_counter() - t1)
    return statistics.median(starts), statistics.median(stops)


CANDIDATES = {"untraced": {}, "untraced again": {}, "no-op hooks": {"noop_hooks": True},
              "stats=False": {"stats": False}, "stats=True": {"stats": True}}


def one_process(name: str, blocks: int, steps: int, no_gc: bool = False, backend: str = "engine") -> float:
    """The median step of one candidate, alone in this process (see ``main``); with ``no_gc``
    the garbage collector is off for the timed steps (what the hooks cost in CPU alone)."""
    step, trace = make_step(blocks, fw=framework(backend), **CANDIDATES[name])
    for _ in range(2):
        step()
    if no_gc:
        gc.collect()
        gc.disable()
    times = []
    for _ in range(steps):
        t0 = time.thread_time()
        step()
        times.append(time.thread_time() - t0)
    if trace is not None:
        trace.stop()
    return statistics.median(times)


def main() -> None:
    """Each candidate runs in a process of its own, the processes interleaved round by round.

    Not all in one process, as the small benchmarks do: a step of this model allocates ~10^5
    Python objects, so Python's garbage collector runs full collections during it, and each walks
    every object in the process. Five 10,001-module copies in one process would make every
    collection walk all five, billed to whichever candidate allocated at the moment (the one
    with hooks, mostly): a cost no real run has."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per process")
    parser.add_argument("--blocks", type=int, default=2500)
    parser.add_argument("--no-gc", action="store_true",
                        help="garbage collector off during the timed steps: the CPU cost without collections")
    parser.add_argument("--backend", choices=("engine", "torch"), default="engine")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # child mode: time one candidate
    args = parser.parse_args()
    if args.one:
        print(one_process(args.one, args.blocks, args.steps, args.no_gc, args.backend))
        return
    samples: dict[str, list[float]] = {name: [] for name in CANDIDATES}
    for _ in range(args.rounds):
        for name in CANDIDATES:
            out = subprocess.run([sys.executable, __file__, "--one", name, "--blocks", str(args.blocks),
                                  "--steps", str(args.steps), "--backend", args.backend] + ["--no-gc"] * args.no_gc,
                                 capture_output=True, text=True, check=True)
            samples[name].append(float(out.stdout.split()[-1]))
    med = {name: statistics.median(s) for name, s in samples.items()}
    base = med["untraced"]
    print(f"{args.backend}: {args.blocks} blocks ({4 * args.blocks + 1} modules), batch 2, 1 thread; "
          f"median over {args.rounds} "
          f"processes of each one's median of {args.steps} steps" + (", garbage collector off" * args.no_gc))
    for name, sec in med.items():
        print(f"  {name:15s} {sec * 1e3:8.1f} ms/step   x{sec / base:.3f}")
    start, stop = attach_times(args.blocks, 5, framework(args.backend))
    print(f"  attach (start) {start * 1e3:8.1f} ms   detach (stop) {stop * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
