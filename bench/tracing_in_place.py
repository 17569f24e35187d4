"""Where a traced step's tracer time goes, measured in place: wall-clock time inside each of the
tracer's hooks (and the parts of the optimizer hooks), per step of the seed MNIST ``Net``
(batch 64, eval mode, ``stats=False`` unless ``--stats``), averaged over ``--steps`` steps.

``bench_tracing.py`` gives the overall ratio; this says which hook it comes from. Each timed call
costs ~0.3 µs more than it would untimed, and the parts nest inside the hooks (their rows are
not additive). A garbage collection that lands in a hook is counted there.

Run: ``.venv/bin/python bench/tracing_in_place.py [--steps 500] [--stats]``.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "modscope" / "examples"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import _common  # noqa: E402,F401  (pins BLAS threads before NumPy loads)
from bench_tracing import net_step  # noqa: E402

from engine.utils.hooks import transparent_hook  # noqa: E402
from modscope.capture import param_stats  # noqa: E402
from modscope.capture import recorder as tracer  # noqa: E402

HOOKS = ("_on_forward_pre", "_on_forward", "_on_backward_pre", "_on_backward", "_on_optimizer_pre",
         "_on_optimizer_post")
PARTS = ((tracer.Trace, ("_deliver_pending", "_emit_params", "_advance")),
         (param_stats.StatsPlan, ("snapshot", "stats", "matches")))

total_ns: collections.Counter = collections.Counter()
calls: collections.Counter = collections.Counter()


def timed(name: str, fn):
    clock = time.perf_counter_ns

    def wrapper(*args, **kwargs):
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            total_ns[name] += clock() - start
            calls[name] += 1
    if getattr(fn, "_engine_transparent_hook", False):
        transparent_hook(wrapper)  # keep the observer marker the engine checks
    return wrapper


def instrument() -> None:
    for name in HOOKS:
        setattr(tracer.Trace, name, timed(name, getattr(tracer.Trace, name)))
    # the tracer recognises its own hooks by identity: tell it about the timed ones
    tracer._OUR_HOOKS = frozenset(getattr(tracer.Trace, name) for name in HOOKS)
    for cls, names in PARTS:
        for name in names:
            setattr(cls, name, timed(f"{cls.__name__}.{name}", getattr(cls, name)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--stats", action="store_true")
    args = parser.parse_args()
    instrument()
    step, trace = net_step(stats=args.stats)
    for _ in range(30):
        step()
    total_ns.clear()
    calls.clear()
    start = time.perf_counter_ns()
    for _ in range(args.steps):
        step()
    per_step = (time.perf_counter_ns() - start) / args.steps
    trace.stop()
    print(f"Net step {per_step / 1e3:,.0f} µs (timed), stats={args.stats}; time inside, per step:")
    for name in HOOKS:
        print(f"  {name:24s} {total_ns[name] / args.steps / 1e3:7.1f} µs  ({calls[name] / args.steps:.0f} calls)")
    hooks = sum(total_ns[name] for name in HOOKS) / args.steps / 1e3
    print(f"  {'all hooks':24s} {hooks:7.1f} µs  ({hooks * 1e3 / per_step:.1%} of the step)")
    print("  of which:")
    for cls, names in PARTS:
        for name in names:
            key = f"{cls.__name__}.{name}"
            print(f"    {key:24s} {total_ns[key] / args.steps / 1e3:7.1f} µs  ({calls[key] / args.steps:.0f} calls)")


if __name__ == "__main__":
    main()
