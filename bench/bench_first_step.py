"""What the first step of a new trace costs (issue 31: target <= 1.5x a plain step), by hand.

Model: ``bench_long_run``'s GPT-2 (``_gpt2_loop.gpt2_step``: transformers' ``GPT2LMHeadModel``, 2
layers, 128 wide, batch 8 x 64, AdamW, one thread). Every launch is a fresh process (imports from
compiled bytecode, as installed: ``_gpt2_loop.BYTECODE``), and each prints the times of its steps:

- ``in process``: a script that trains plain for ``--warm`` steps, then runs one more plain step
  (``plain A/A``: its ratio to the warm steps' median is the noise of one step), then starts
  ``modscope.trace(model)`` and runs one step (``trace: first step``: ``trace()``, ``start()`` and
  the step, what a user who starts a trace in a notebook waits for), then one more
  (``trace: second step``, a warm full step). Ratios are to the median of the process's last
  ``--warm // 2`` plain steps.
- ``record``/``run``: the same script's loop from its first step, plain (twice: ``plain A/A``),
  under ``modscope record`` and under ``modscope run``'s child streaming to the TUI's state
  (``_gpt2_loop.launch_live``), both with the defaults. The trace starts before the script (its
  start is not the step's); the first step pays finding the model at its first call (the walk,
  the ``model`` event, the compiled-model check), the graph event and the full step's hooks. Ratio
  of each launch's first step to the first plain launch's first step of the round (both cold:
  torch's first step allocates and warms up too), and of its warm steps to the plain warm steps.

Launches run in rounds, each round in a new seeded random order; the table gives medians over
rounds of per-round ratios, CPU (the process's) and wall.

Run: ``.venv/bin/python bench/bench_first_step.py [--rounds 5] [--warm 6]`` (needs transformers).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import statistics
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401 - one BLAS thread, before NumPy or torch
from _gpt2_loop import LOOP_IMPORT, ROOT, launch, launch_live

sys.path.insert(0, str(ROOT))

SCRIPT = LOOP_IMPORT + '''
import json, statistics, sys, time
mode, warm = sys.argv[1], int(sys.argv[2])
import torch  # (what `modscope record`/`run` look for to trace torch by default)
from _gpt2_loop import gpt2_step
model, step = gpt2_step()
import modscope  # (imported before any timing: a script under record/run has it loaded already)
def timed(fn):
    c, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - w
times = [timed(step) for _ in range(warm)]
out = {"steps": times}
if mode == "in-process":
    out["aa"] = timed(step)
    tr = None
    def first():
        global tr
        tr = modscope.trace(model).start()
        step()
    out["first"] = timed(first)
    out["second"] = timed(step)
    tr.stop()
print("FIRSTSTEP " + json.dumps(out), flush=True)
'''


DETAIL = "every=50,first=2"  # modscope's defaults, as `modscope run` passes them to its child


def _parse(output: str, what: str) -> dict:
    for line in output.splitlines():
        if line.startswith("FIRSTSTEP "):
            return json.loads(line[len("FIRSTSTEP "):])
    raise RuntimeError(f"{what}: no FIRSTSTEP line in its output:\n{output[-2000:]}")


def _warm(steps: list[list[float]], k: int) -> tuple[float, float]:
    tail = steps[-k:]
    return statistics.median(c for c, _ in tail), statistics.median(w for _, w in tail)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warm", type=int, default=6, help="plain steps before the trace (in process), "
                                                            "steps of each loop (record/run)")
    parser.add_argument("--base", metavar="DIR", help="also time the in-process, record and run launches on the "
                                                       "modscope tree in DIR (e.g. `git archive REV modscope engine | "
                                                       "tar -x -C DIR`), interleaved: before/after in one run")
    opts = parser.parse_args()
    if importlib.util.find_spec("transformers") is None:
        sys.exit("bench_first_step: needs transformers (pip install transformers)")
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
    py, k = sys.executable, max(opts.warm // 2, 1)
    with tempfile.TemporaryDirectory(prefix="bench-first-step-") as folder:
        script = os.path.join(folder, "train.py")
        Path(script).write_text(SCRIPT)
        trace = os.path.join(folder, "t.jsonl.gz")
        loop = ["loop", str(opts.warm)]
        record = [py, "-m", "modscope", "record", "--trace-file", trace, script, *loop]
        cands = {
            "in process": lambda: launch([py, script, "in-process", str(opts.warm)], "in process", _parse),
            "plain": lambda: launch([py, script, *loop], "plain", _parse),
            "plain A/A": lambda: launch([py, script, *loop], "plain A/A", _parse),
            "record": lambda: launch(record, "record", _parse),
            "run": lambda: launch_live(script, loop, trace, DETAIL, _parse),
        }
        if opts.base:
            base = os.path.abspath(opts.base)
            cands["in process [base]"] = lambda: launch([py, script, "in-process", str(opts.warm)], "base", _parse,
                                                        base)
            cands["record [base]"] = lambda: launch(record, "record [base]", _parse, base)
            cands["run [base]"] = lambda: launch_live(script, loop, trace, DETAIL, _parse, base)
            cands["in process [base]"]()  # (its bytecode too)
        cands["plain"]()  # compiles the bytecode of everything imported (not timed)
        rows: dict[str, list[tuple[float, float]]] = {}
        order, shuffle = list(cands), random.Random(0).shuffle
        for r in range(opts.rounds):
            shuffle(order)
            got = {name: cands[name]() for name in order}
            base_first = got["plain"]["steps"][0]
            base_warm = _warm(got["plain"]["steps"], k)
            for tree in ("", " [base]") if opts.base else ("",):
                inp = got["in process" + tree]
                inp_warm = _warm(inp["steps"], k)
                for name, value in (("in process: plain A/A step", inp["aa"]),
                                    ("in process: trace, first step", inp["first"]),
                                    ("in process: trace, second step", inp["second"])):
                    name = name.replace(":", tree + ":")
                    rows.setdefault(name, []).append((value[0] / inp_warm[0], value[1] / inp_warm[1]))
            for name in ("plain A/A", "record", "run") + (("record [base]", "run [base]") if opts.base else ()):
                first = got[name]["steps"][0]
                rows.setdefault(f"{name}: first step", []).append((first[0] / base_first[0], first[1] / base_first[1]))
                warm = _warm(got[name]["steps"], k)
                rows.setdefault(f"{name}: warm steps", []).append((warm[0] / base_warm[0], warm[1] / base_warm[1]))
            rows.setdefault("(plain first / plain warm)", []).append(
                (base_first[0] / base_warm[0], base_first[1] / base_warm[1]))
            rows.setdefault("(plain warm step, ms)", []).append((base_warm[0] * 1e3, base_warm[1] * 1e3))
            print(f"  round {r + 1}/{opts.rounds} done", file=sys.stderr, flush=True)
            table(rows)


def table(rows: dict[str, list[tuple[float, float]]]) -> None:
    n = len(next(iter(rows.values())))
    print(f"\nfirst step of a trace, GPT-2 (2 layers, 128 wide); {n} rounds; medians of per-round ratios")
    print(f"{'':<34} {'cpu':>8} {'wall':>8}")
    for name, values in rows.items():
        cpu = statistics.median(c for c, _ in values)
        wall = statistics.median(w for _, w in values)
        print(f"{name:<34} {cpu:8.3f} {wall:8.3f}", flush=True)


if __name__ == "__main__":
    main()
