"""A trace's memory, and the speed and memory of saving and loading big traces, by hand (issue 21).

The model of the issue: 2,500 blocks of [Linear(8, 8), ReLU, LayerNorm(8), Identity] in one
``Sequential`` (10,001 modules, 40,006 module events a step), batch 2, SGD, on the engine.

Three measurements, each in a fresh subprocess (memory figures are the process's own):

1. ``rss``: resident memory while the model trains under ``modscope.trace`` without a sink, at
   0, 250k, 500k and 1M events (25 steps), and the step time at the start and at the end (a
   growing heap makes full garbage collections slower). Modes: the default bounds, the default
   again (the A/A row), ``keep_steps=4``, ``spill=`` a file, and everything kept
   (``keep_steps=None, max_events=None``: the old default).
2. ``save``: ``tr.save`` of a ~1M-event trace (one real step of the model, its records
   repeated 25 times with new sequence numbers and steps): CPU and wall seconds, and the peak
   resident memory above what the process held before (the kernel's high-water mark, reset first).
3. ``load``: ``load_trace`` of that file, then iterating every event, then ``firing_order``:
   CPU seconds each and the peak extra memory of the three together; also what validating an
   event costs (``schema.validate`` and the module-event shortcut, µs).

Times are CPU seconds of the (single-threaded) child: on a shared machine wall time mostly
measures the other processes.

``--before DIR`` runs the same phases against another checkout's ``modscope`` and ``engine``
(e.g. ``git archive HEAD~1 modscope engine | tar -x -C DIR``) for before/after rows. Rounds are
interleaved (after, after again, before), and the figures are medians.

Run: ``.venv/bin/python bench/bench_trace_memory.py [--rounds 3] [--before DIR] [--skip-rss]``.

Measured 2026-11-26 (2 shared cores, load average ~14; ``--rounds 3``, before = commit 585ac3c):

    save, 1,000,154 events (196 MB)   CPU s   peak extra MiB
      after / after again             1.79 / 1.74     61.5 / 61.5
      before                          8.16            989
    load_trace / iterate / firing_order, CPU s           peak extra MiB
      after / after again   2.50 / 1.13 / 0.036  ·  2.64 / 1.13 / 0.044    92.1 / 91.9
      before                8.60 / 0.034 (a list in memory) / 0.149         1,170
    RSS above the start at 0 / 250k / 500k / 1M events (MiB)
      default, default again         0 / 113 / 113 / 113  ·  0 / 114 / 114 / 114  (4 steps kept)
      keep_steps=4                   0 / 102 / 101 / 101
      spill=file                     0 / 72 / 72 / 72    (10,000 events kept beside the file)
      keep everything; before        0 / 168 / 244 / 397;  0 / 166 / 243 / 395
    step CPU s, steps 2-6 vs the last 5: 1.70 vs 1.60 (default), 1.47 vs 1.63 (before)

Measured again 2026-11-26 (load average ~2; ``--rounds 3 --skip-rss``, before = commit cbd641c;
after: module lines checked by ``files.MODULE_LINE`` instead of parsed, lines split a chunk at
a time, one generator step per event when iterating):

    save, 1,000,154 events            CPU s (after / again / before)     peak extra MiB
                                      1.47 / 1.53 / 1.49                 61.4 each
    load_trace / iterate / firing_order, CPU s                       total   peak extra MiB
      after                 1.41 / 0.901 / 0.024                      2.34    89.6
      after again           1.40 / 0.904 / 0.024                      2.33    89.6
      before                2.23 / 1.01 / 0.026                       3.27    92.4
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MIB = 1 << 20
CHECKPOINTS = (0, 250_000, 500_000, 1_000_000)
RSS_MODES = {
    "default": {},
    "default again": {},
    "keep_steps=4": {"keep_steps": 4},
    "spill=file": {"spill": True},
    "keep everything": {"keep_steps": None, "max_events": None},
}


def rss_now() -> int:
    """Resident bytes of this process now (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def reset_peak() -> None:
    """Reset the kernel's high-water mark of resident memory (``VmHWM``) to what is resident now."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


# --- the child's side: one measurement, printed as one JSON line --------------------------------

def _model_step(modscope_kw: dict):
    import numpy as np

    import engine
    import modscope

    engine.manual_seed(0)
    layers = []
    for _ in range(2500):
        layers += [engine.nn.Linear(8, 8), engine.nn.ReLU(), engine.nn.LayerNorm(8), engine.nn.Identity()]
    model = engine.nn.Sequential(*layers)
    opt = engine.optim.SGD(model.parameters(), lr=1e-3)
    x = engine.from_numpy(np.random.default_rng(0).standard_normal((2, 8)).astype(np.float32))
    tr = modscope.trace(model, **modscope_kw).start()

    def step() -> None:
        opt.zero_grad()
        model(x).square().mean().backward()
        opt.step()
    return tr, step


def child_rss(mode: str, tmp: str) -> dict:
    kw = dict(RSS_MODES[mode])
    if kw.pop("spill", False):
        kw["spill"] = os.path.join(tmp, "spill.jsonl")
    tr, step = _model_step(kw)
    gc.collect()
    rss, times, marks = {}, [], list(CHECKPOINTS)
    base = rss_now()
    while marks:
        if tr._seq >= marks[0]:
            rss[marks.pop(0)] = (rss_now() - base) / MIB
            continue
        t0 = time.process_time()
        step()
        times.append(time.process_time() - t0)
    kept = sum(1 for _ in tr.iter_events()) if hasattr(tr, "iter_events") else len(tr._memory.body)
    tr.close()
    return {"rss_extra_mib": rss, "first_steps_cpu_s": statistics.median(times[1:6]),
            "last_steps_cpu_s": statistics.median(times[-5:]), "steps": len(times), "kept_events": kept,
            "dropped": tr.dropped, "dropped_steps": getattr(tr, "dropped_steps", None)}


def _big_trace(copies: int = 25):
    """A trace holding ``copies`` steps of the model's records (one real step, repeated)."""
    try:
        tr, step = _model_step({"keep_steps": None, "max_events": None})
    except TypeError:  # a checkout before keep_steps: unbounded was its default
        tr, step = _model_step({})
    step()
    tr._deliver_pending()
    log = tr._memory
    # the step's records (tuples) and step/params dicts: the graph event is the first step's only
    first = [item for item in log.body if type(item) is tuple or item["kind"] != "graph"]
    n = tr._seq
    for k in range(1, copies):
        batch = []
        for item in first:
            if type(item) is tuple:
                batch.append((item[0], item[1] + k * n, item[2], item[3] + k) + item[4:])
            else:
                batch.append({**item, "seq": item["seq"] + k * n, "step": item["step"] + k})
        log.write_records(batch, headers=False)
    tr._seq = copies * n
    tr._step = copies - 1
    tr.stop()
    return tr


def child_save(path: str) -> dict:
    tr = _big_trace()
    gc.collect()
    reset_peak()
    base = rss_now()
    t0, c0 = time.perf_counter(), time.process_time()
    tr.save(path)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"cpu_s": cpu, "wall_s": seconds, "peak_extra_mib": (peak() - base) / MIB,
            "mbytes": os.path.getsize(path) / 1e6}


def child_load(path: str) -> dict:
    import modscope

    gc.collect()
    reset_peak()
    base = rss_now()
    clock = time.process_time  # CPU seconds: on a shared machine, waiting is not the code's
    t0 = clock()
    tr = modscope.load_trace(path)
    t1 = clock()
    events = tr.iter_events() if hasattr(tr, "iter_events") else iter(tr.events)
    count = sum(1 for _ in events)
    t2 = clock()
    order = tr.firing_order()
    t3 = clock()
    out = {"load_cpu_s": t1 - t0, "iterate_cpu_s": t2 - t1, "firing_order_cpu_s": t3 - t2, "events": count,
           "module_events": len(order), "peak_extra_mib": (peak() - base) / MIB}
    out.update(_validation_cost(path))
    return out


def _validation_cost(path: str, n: int = 100_000) -> dict:
    """µs per event of ``schema.validate`` and of the module-event shortcut (when there is one)."""
    import itertools

    from modscope.events import files, schema

    with open(path, "rb") as f:
        events = [schema.loads(line) for line in itertools.islice(f, n)]
    t0 = time.perf_counter()
    for e in events:
        schema.validate(e)
    full = (time.perf_counter() - t0) / len(events) * 1e6
    fast = getattr(files, "valid_event", None)
    if fast is None:
        return {"validate_us": full}
    t0 = time.perf_counter()
    for e in events:
        if not fast(e):
            schema.validate(e)
    return {"validate_us": full, "shortcut_us": (time.perf_counter() - t0) / len(events) * 1e6}


# --- the driver ------------------------------------------------------------------------------------

def run_child(root: Path, phase: str, arg: str, tmp: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, __file__, "--child", phase, arg, "--tmp", tmp], env=env,
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{phase} {arg} under {root} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def medians(rows: list[dict]) -> dict:
    return {k: statistics.median(r[k] for r in rows) for k in rows[0] if isinstance(rows[0][k], (int, float))}


def fmt(row: dict) -> str:
    return "  ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in row.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", type=Path, help="another checkout's root (its modscope and engine)")
    parser.add_argument("--skip-rss", action="store_true")
    parser.add_argument("--only-rss", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("PHASE", "ARG"), help=argparse.SUPPRESS)
    parser.add_argument("--tmp", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        phase, arg = args.child
        result = {"rss": child_rss, "save": child_save, "load": child_load}[phase](
            *((arg, args.tmp) if phase == "rss" else (arg,)))
        print(json.dumps(result))
        return
    roots = {"after": ROOT, "after again": ROOT}
    if args.before:
        roots["before"] = args.before.resolve()
    with tempfile.TemporaryDirectory() as tmp:
        if not args.only_rss:
            save_rows: dict[str, list[dict]] = {name: [] for name in roots}
            load_rows: dict[str, list[dict]] = {name: [] for name in roots}
            for _ in range(args.rounds):
                for name, root in roots.items():
                    save_rows[name].append(run_child(root, "save", os.path.join(tmp, f"{name}.jsonl"), tmp))
                for name, root in roots.items():  # every checkout loads the same file (the after save)
                    load_rows[name].append(run_child(root, "load", os.path.join(tmp, "after.jsonl"), tmp))
            print(f"save of a 1M-event trace (medians of {args.rounds}):")
            for name, rows in save_rows.items():
                print(f"  {name:12s} {fmt(medians(rows))}")
            print(f"load_trace + iterate + firing_order of that file (medians of {args.rounds}):")
            for name, rows in load_rows.items():
                print(f"  {name:12s} {fmt(medians(rows))}")
        if args.skip_rss:
            return
        print("RSS above the traced model's start (MiB) at 0 / 250k / 500k / 1M events, one run each:")
        runs = [(name, mode, root) for name, root in (("after", ROOT), ("before", roots.get("before")))
                if root is not None for mode in (RSS_MODES if name == "after" else ("default",))]
        for name, mode, root in runs:
            r = run_child(root, "rss", mode, tmp)
            marks = " / ".join(f"{v:.0f}" for v in r.pop("rss_extra_mib").values())
            print(f"  {name:6s} {mode:16s} {marks}   {fmt(r)}")


if __name__ == "__main__":
    main()
