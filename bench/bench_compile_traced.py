"""What compiling costs while modscope's hooks are on (issue 31, compiled models), by hand.

A script that calls ``torch.compile`` after its trace started (any compiling script under
``modscope run``/``record`` without ``--eager``) has dynamo compile the model with modscope's hooks
on. Each launch is a fresh process (dynamo's caches empty) that builds ``bench_compile``'s 4-block
transformer (one thread), then times the first training step through ``torch.compile(model)``
(dynamo's import, tracing and the backend's compile included) and the median of ``--steps``
steps after it:

- ``untraced``: no trace (twice: ``untraced A/A``);
- ``traced``: inside ``modscope.trace(model)`` (every step in full);
- ``traced [base]`` (``--base DIR``): the same on the modscope tree in DIR, for a before/after.

Also the compile's figures (dynamo's ``unique_graphs``, graph breaks) and how many of the model's
module calls the trace recorded. Launches interleaved in rounds (new seeded order each round);
medians. ``--backend eager`` (default: dynamo only, no C compiler needed) or ``inductor``.

Run: ``.venv/bin/python bench/bench_compile_traced.py [--rounds 3] [--backend eager] [--base DIR]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401 - one BLAS thread, before NumPy or torch
from _gpt2_loop import env as _env

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = '''
import json, statistics, sys, time
mode, backend, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
import torch
import modscope
sys.path.insert(0, sys.argv[4])
from bench_compile import make, step
torch.set_num_threads(1)
model = make()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(8, 32, 64), torch.randint(0, 10, (8,))
tr = modscope.trace(model, graph=False, max_events=None).start() if mode == "traced" else None
t0 = time.perf_counter()
compiled = torch.compile(model, backend=backend)
step(compiled, opt, x, y)  # dynamo's import, tracing and the backend's compile
first = time.perf_counter() - t0
later = statistics.median(step(compiled, opt, x, y) for _ in range(steps))
calls = 0
if tr is not None:
    tr.stop()
    calls = sum(1 for e in tr.events if e["kind"] == "forward_pre")
from torch._dynamo.utils import counters
print("COMPILE " + json.dumps({"first": first, "later": later, "graphs": counters["stats"]["unique_graphs"],
                               "breaks": sum(counters["graph_break"].values()), "calls": calls}), flush=True)
'''


def launch(script: str, mode: str, backend: str, steps: int, source: str | None) -> dict:
    env = _env({"PYTHONPATH": source} if source else None)
    proc = subprocess.run([sys.executable, script, mode, backend, str(steps), str(ROOT / "bench")],
                          capture_output=True, text=True, env=env, timeout=3600)
    for line in (proc.stdout + proc.stderr).splitlines():
        if line.startswith("COMPILE "):
            return json.loads(line[len("COMPILE "):])
    raise RuntimeError(f"{mode} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--backend", default="eager", help="torch.compile's backend (eager, inductor)")
    parser.add_argument("--base", metavar="DIR", help="also time `traced` on the modscope tree in DIR")
    opts = parser.parse_args()
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min); backend {opts.backend}")
    with tempfile.TemporaryDirectory(prefix="bench-compile-traced-") as folder:
        script = os.path.join(folder, "compile.py")
        Path(script).write_text(SCRIPT)
        cands = {"untraced": ("untraced", None), "untraced A/A": ("untraced", None), "traced": ("traced", None)}
        if opts.base:
            cands["traced [base]"] = ("traced", os.path.abspath(opts.base))
        samples: dict[str, list[dict]] = {name: [] for name in cands}
        order, shuffle = list(cands), random.Random(0).shuffle
        for r in range(opts.rounds):
            shuffle(order)
            for name in order:
                mode, source = cands[name]
                samples[name].append(launch(script, mode, opts.backend, opts.steps, source))
            print(f"  round {r + 1}/{opts.rounds} done", file=sys.stderr, flush=True)
        base_first = statistics.median(s["first"] for s in samples["untraced"])
        base_later = statistics.median(s["later"] for s in samples["untraced"])
        print(f"{'':<16}{'first step s':>13}{'× untraced':>11}{'later ms':>10}{'× untraced':>11}"
              f"{'graphs':>8}{'breaks':>8}{'calls':>7}")
        for name, s in samples.items():
            first = statistics.median(v["first"] for v in s)
            later = statistics.median(v["later"] for v in s)
            print(f"{name:<16}{first:>13.2f}{first / base_first:>11.2f}{later * 1e3:>10.2f}{later / base_later:>11.2f}"
                  f"{s[-1]['graphs']:>8}{s[-1]['breaks']:>8}{s[-1]['calls']:>7}")


if __name__ == "__main__":
    main()
