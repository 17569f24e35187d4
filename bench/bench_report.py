"""``modscope report`` of a 1M-event trace: time, peak extra memory and the page's size (issue 28).

The trace is the one ``bench_trace_memory.py`` saves: the 10,001-module model of issue 21
(2,500 x [Linear(8,8), ReLU, LayerNorm, Identity]), one real step's records repeated 25 times
(1,000,154 events, ~196 MB of JSON Lines, 10,000 parameters with statistics per step). It is
written once; then each round runs, in a fresh subprocess, ``views.html.page.write_report`` on
it (what ``modscope report TRACE -o run.html`` does after parsing its arguments), twice: "report"
and "report again" (the A/A row), alternating.

Figures per run: CPU seconds and wall seconds of ``write_report`` (the child is single-threaded:
on a shared machine CPU time is the code's, wall time adds the waiting), the peak resident
memory above what the process held before it (the kernel's high-water mark, reset first; the
modules are imported before) and the size of the page written. Targets (issue 28): <= 10 s and
<= 200 MiB extra; the page <= 20 MB for a 10,000-module model.

``--base DIR`` adds a row for another checkout's ``modscope`` and ``engine`` (e.g.
``mkdir DIR && git archive BASE modscope engine | tar -x -C DIR``), run on the same trace in the
same rounds: each round runs the three in a rotated order, and the ratios to "report" are of the
medians. Times on a shared machine: compare rows of one run, beside the A/A row's spread; the load
average is printed before and after.

Run: ``.venv/bin/python bench/bench_report.py [--rounds 3] [--trace FILE] [--base DIR]``
(``--trace``: use that file instead of writing the 1M-event one).

Measured 2026-11-29 on the shared machine (2 cores, five engineers, the child at nice 19; load
average 7-10 during both runs; ``--rounds 3 --base DIR``, base = commit 0000c5e; after: the
digest reads a step's firing order only for steps the sampler keeps, the collector paused during
the build, the graph drawn without importing textual). Wall seconds measure the other processes;
CPU seconds are inflated by them too but comparable within a run:

    run 1 (load 10.0 -> 8.7)   CPU s    wall s   peak extra MiB   page MB
      report                    9.26     27.2     173              10.2
      report again (A/A)        9.32     32.3     173              10.2    CPU ratio 1.006, wall 1.18
      base                     14.9      44.0     187              10.2    CPU ratio 1.60, wall 1.61
    run 2 (load 7.1 -> 6.1)
      report                   10.4      31.7     173              10.2
      report again (A/A)        9.49     25.6     173              10.2    CPU ratio 0.909, wall 0.808
      base                     15.2      38.6     187              10.2    CPU ratio 1.46, wall 1.22
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: F401  (one BLAS thread)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MIB = 1 << 20


def child_report(trace: str, out: str) -> dict:
    from bench_trace_memory import peak, reset_peak, rss_now

    from modscope.views.html.page import write_report

    gc.collect()
    reset_peak()
    base = rss_now()
    w0, c0 = time.perf_counter(), time.process_time()
    report = write_report(trace, out)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    import modscope

    return {"cpu_s": cpu, "wall_s": wall, "peak_extra_mib": (peak() - base) / MIB,
            "page_mb": os.path.getsize(out) / 1e6, "notes": report.notes, "warnings": report.warnings,
            "modscope": os.path.dirname(os.path.dirname(modscope.__file__))}


def child_write(trace: str) -> dict:
    from bench_trace_memory import child_save

    return child_save(trace)


def run_child(*args: str, root: Path = ROOT) -> dict:
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{HERE}", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise RuntimeError(f"{args} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--trace", help="report this trace file instead of the 1M-event one")
    parser.add_argument("--base", type=Path, help="another checkout's root (its modscope and engine): a row for it")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        phase, *rest = args.child
        print(json.dumps({"report": child_report, "write": child_write}[phase](*rest)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        trace = args.trace
        if trace is None:
            trace = os.path.join(tmp, "big.jsonl")
            run_child("write", trace)
        events = sum(1 for _ in open(trace, "rb")) if not trace.endswith(".gz") else None
        print(f"trace: {trace} ({os.path.getsize(trace) / 1e6:.0f} MB" + (f", {events:,} events)" if events else ")"))
        roots = {"report": ROOT, "report again": ROOT}
        if args.base:
            roots["base"] = args.base.resolve()
            if not (roots["base"] / "modscope" / "__init__.py").exists():
                parser.error(f"--base {args.base}: no modscope package in it")
        print(f"load average before: {_load()}")
        rows: dict[str, list[dict]] = {name: [] for name in roots}
        names = list(roots)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:  # (rotated: no arm always first)
                rows[name].append(run_child("report", trace, os.path.join(tmp, "run.html"), root=roots[name]))
        print(f"load average after:  {_load()}")
        print(f"write_report (medians of {args.rounds}; ratio: wall and CPU seconds to \"report\"'s):")
        meds = {name: {k: statistics.median(r[k] for r in runs) for k in ("cpu_s", "wall_s", "peak_extra_mib",
                                                                            "page_mb")}
                for name, runs in rows.items()}
        for name, med in meds.items():
            ratio = (f"  ratio wall={med['wall_s'] / meds['report']['wall_s']:.3f}"
                     f" cpu={med['cpu_s'] / meds['report']['cpu_s']:.3f}")
            spread = "/".join(f"{r['wall_s']:.1f}" for r in rows[name])
            print(f"  {name:13s} " + "  ".join(f"{k}={v:.3g}" for k, v in med.items()) + ratio
                  + f"  (wall each: {spread}; {rows[name][0]['modscope']})")
        for line in rows["report"][-1]["notes"] + rows["report"][-1]["warnings"]:
            print(f"  page says: {line}")


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
