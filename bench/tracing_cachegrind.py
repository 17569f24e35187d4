"""Where a traced step's cost goes, in counts that do not depend on the machine's noise:
valgrind's cachegrind runs the seed MNIST ``Net`` training step (batch 64, eval mode, as in
``bench_tracing.py``) and reports, per step, the instructions executed and the simulated cache
misses (level-1 instruction, level-1 data, last level) of

- ``untraced``;
- ``no-op hooks``: the four hooks a trace registers on every module, doing nothing (the engine);
- ``stats=False``: ``modscope.trace(model)``;
- ``... no param stats``: the same trace with ``StatsPlan.snapshot``/``stats`` doing nothing;
- ``... no module hooks``: the same trace with its four module hooks doing nothing.

The last two subtract one part of the tracer each: the difference to ``stats=False`` is that
part's cost. Times on this shared machine move by a point between runs; these counts repeat
exactly. A traced step's extra time comes more from cache misses (the step's arrays evict the
tracer's code and data between two hooks) than from its instructions, hence the simulated caches:
level 1 is 32 KiB (instructions) and 32 KiB (data), the last level 1 MiB (one core's L2 here; the
shared L3 is left out: what it holds depends on the other tenants).

Each figure is (a run of 23 steps - a run of 3 steps) / 20, so start-up and imports drop out.
Two runs at a time (one per core); about ten minutes in all.

Run: ``.venv/bin/python bench/tracing_cachegrind.py`` (needs ``valgrind``: ``apt-get install
valgrind``). A diagnostic, not run by ``make bench``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHES = ("--I1=32768,8,64", "--D1=32768,8,64", "--LL=1048576,16,64")
MODES = {  # name -> what the workload builds
    "untraced": "untraced",
    "no-op hooks": "noop",
    "stats=False": "traced",
    "... no param stats": "traced-no-params",
    "... no module hooks": "traced-no-module-hooks",
}
SHORT, LONG = 3, 23


def workload(mode: str, steps: int) -> None:
    """Build the ``Net`` step for ``mode`` and run it ``steps`` times (inside valgrind)."""
    sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "modscope" / "examples"), str(ROOT)]
    from bench_tracing import net_step

    from engine.utils.hooks import transparent_hook
    from modscope.capture import param_stats
    from modscope.capture import recorder as tracer

    if mode == "traced-no-params":
        param_stats.StatsPlan.snapshot = lambda self: None
        param_stats.StatsPlan.stats = lambda self, paths: []
    elif mode == "traced-no-module-hooks":
        for name in ("_on_forward_pre", "_on_forward"):
            setattr(tracer.Trace, name, lambda self, *a: None)
        for name in ("_on_backward_pre", "_on_backward"):
            setattr(tracer.Trace, name, transparent_hook(lambda self, *a: None))
    kw = {"noop_hooks": True} if mode == "noop" else {"stats": False} if mode.startswith("traced") else {}
    step, _ = net_step(**kw)
    for _ in range(steps):
        step()


def counts(mode: str, steps: int) -> dict[str, int]:
    """cachegrind's totals for the whole process (start-up included) running ``steps`` steps."""
    # One BLAS thread: idle BLAS threads spinning would be counted too; fixed hashing: dict and
    # set layouts, and so the counts, repeat from run to run.
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
           "PYTHONHASHSEED": "0"}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cachegrind.out"
        subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=yes", *CACHES,
                        f"--cachegrind-out-file={out}", sys.executable, __file__, "--run", mode, str(steps)],
                       capture_output=True, text=True, check=True, env=env)
        return parse_totals(out.read_text())


def parse_totals(text: str) -> dict[str, int]:
    """The ``events:`` names and ``summary:`` totals of a cachegrind output file."""
    events = summary = None
    for line in text.splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(v) for v in line.split()[1:]]
    if events is None or summary is None or len(events) != len(summary):
        raise ValueError("not a cachegrind output file (no events: and summary: lines of one length)")
    return dict(zip(events, summary, strict=True))


def per_step(mode: str, pool: ThreadPoolExecutor) -> dict[str, float]:
    short, long = pool.map(lambda n: counts(mode, n), (SHORT, LONG))
    return {k: (long[k] - short[k]) / (LONG - SHORT) for k in long}


def columns(c: dict[str, float]) -> tuple[float, float, float, float]:
    """Instructions, L1 instruction misses, L1 data misses (reads and writes), last-level misses."""
    return c["Ir"], c["I1mr"], c["D1mr"] + c["D1mw"], c["ILmr"] + c["DLmr"] + c["DLmw"]


def report(results: dict[str, dict[str, float]]) -> str:
    base = columns(results["untraced"])
    lines = [f"{'per Net step':22s} {'instructions':>14s} {'L1i misses':>11s} {'L1d misses':>11s} {'LL misses':>10s}"]
    for name, c in results.items():
        values = columns(c)
        if name == "untraced":
            lines.append(f"{name:22s} {values[0]:14,.0f} {values[1]:11,.0f} {values[2]:11,.0f} {values[3]:10,.0f}")
        else:
            d = [v - b for v, b in zip(values, base, strict=True)]
            lines.append(f"{name:22s} {d[0]:+14,.0f} {d[1]:+11,.0f} {d[2]:+11,.0f} {d[3]:+10,.0f}")
    lines.append("(rows below the first: more than untraced)")
    return "\n".join(lines)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("tracing_cachegrind.py needs valgrind (apt-get install valgrind)")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = {name: per_step(mode, pool) for name, mode in MODES.items()}
    print(report(results))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--run"]:
        workload(sys.argv[2], int(sys.argv[3]))
    else:
        main()
