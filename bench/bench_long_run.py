"""What watching a long run costs (issue 31, "cost on long runs"), by hand:

a 60-step training loop in a fresh process, timed by the script itself around the loop (process
start, imports and the trace's start before the loop are not counted; the trace's first step is),
under each way of running it:

- ``plain``, twice (``plain A/A``: the noise floor of one launch against another);
- ``record``: ``python -m modscope record --trace-file F script`` with modscope's defaults
  (``--every 50``: the first 2 steps and every 50th watched in full, the others light);
- ``record --full``: every step in full;
- ``run``: what ``modscope run`` does without its screen: the child (``modscope.capture.child``)
  streaming to a ``SocketSource`` in this process that folds every event into the TUI's
  ``SessionState`` (the live view's own path), defaults, and ``run --full``;
- ``4 no-op hooks``: the plain script with four no-op torch hooks on every module (forward pre,
  forward, full backward pre, full backward): the floor any per-module hook observer pays.

Models: ``gpt2``, transformers' ``GPT2LMHeadModel`` with a small config (2 layers, 128 wide, 4 heads,
vocabulary 1,000, batch 8 x 64 tokens, AdamW, random weights; ``pip install transformers``, a
bench-only extra), and ``engine``, the demo's MNIST ``Net`` on the bundled engine (batch 64 of random
digits, SGD; no hook floor: the engine's hooks are not torch's). One BLAS/torch thread everywhere.

Launches run in rounds, each round in a new random order; the table gives per variant the median
over rounds of the loop's CPU time (the process's: a writer thread's work counts; waiting for the
CPU on a shared machine does not) and of its wall time, and the median of the per-round ratios to
that round's first plain launch (the machine's load moves between rounds more than within one).

Run: ``.venv/bin/python bench/bench_long_run.py [--model gpt2|engine|both] [--rounds 5] [--steps 60]``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import re
import statistics
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401 - one BLAS thread, before NumPy or torch
from _gpt2_loop import LOOP_IMPORT, ROOT, launch, launch_live

sys.path.insert(0, str(ROOT))

SCRIPT = LOOP_IMPORT + '''
import os, sys, time
model_name, steps, hooks = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "hooks"
if model_name == "gpt2":
    import torch  # (what `modscope record`/`run` look for to trace torch by default)
    from _gpt2_loop import gpt2_step
    model, step = gpt2_step()
else:
    import engine as torch
    import engine.nn.functional as F
    from modscope.examples.mnist_net import Net
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
    x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))
    def step():
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()
if hooks:
    import warnings
    warnings.simplefilter("ignore")  # torch warns that hooks on a ModelOutput-returning module never fire
    def noop(*args):
        return None
    for m in model.modules():
        m.register_forward_pre_hook(noop)
        m.register_forward_hook(noop)
        m.register_full_backward_pre_hook(noop)
        m.register_full_backward_hook(noop)
cpu, wall = time.process_time(), time.perf_counter()
for _ in range(steps):
    step()
print(f"LOOP cpu={time.process_time() - cpu:.6f} wall={time.perf_counter() - wall:.6f}", flush=True)
'''

_LOOP = re.compile(r"LOOP cpu=([\d.]+) wall=([\d.]+)")


def _parse(output: str, what: str) -> tuple[float, float]:
    m = _LOOP.search(output)
    if m is None:
        raise RuntimeError(f"{what}: no LOOP line in its output:\n{output[-2000:]}")
    return float(m.group(1)), float(m.group(2))


def variants(model: str, script: str, steps: int, folder: str) -> dict[str, callable]:
    py = sys.executable
    args = [model, str(steps), "none"]
    trace = os.path.join(folder, f"{model}.jsonl.gz")
    # The framework named: the script mentions both, and `auto` picks torch for any script that imports it.
    backend = "torch" if model == "gpt2" else "engine"
    record = [py, "-m", "modscope", "record", "--backend", backend, "--trace-file", trace]
    out = {
        "plain": lambda: launch([py, script, *args], "plain", _parse),
        "plain A/A": lambda: launch([py, script, *args], "plain A/A", _parse),
        "record (defaults)": lambda: launch([*record, script, *args], "record", _parse),
        "record --full": lambda: launch([*record, "--full", script, *args], "record --full", _parse),
        "run (defaults)": lambda: launch_live(script, args, trace, "every=50,first=2", _parse, backend=backend),
        "run --full": lambda: launch_live(script, args, trace, "full", _parse, backend=backend),
    }
    if model == "gpt2":
        out["4 no-op hooks"] = lambda: launch([py, script, model, str(steps), "hooks"], "4 no-op hooks", _parse)
    return out


def bench(model: str, rounds: int, steps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-long-run-") as folder:
        script = os.path.join(folder, "train.py")
        Path(script).write_text(SCRIPT)
        cands = variants(model, script, steps, folder)
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cands}
        order = list(cands)
        shuffle = random.Random(0).shuffle
        for r in range(rounds):
            shuffle(order)
            for name in order:
                samples[name].append(cands[name]())
            print(f"  round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
            if r + 1 < rounds:  # what a long run has so far, should it be stopped
                table(model, steps, samples)
    table(model, steps, samples)


def table(model: str, steps: int, samples: dict[str, list[tuple[float, float]]]) -> None:
    base = samples["plain"]
    rounds = len(base)
    print(f"\n{model}: {steps}-step loop, {rounds} rounds (median; ratio: median of per-round ratios to plain)")
    print(f"{'variant':<20} {'cpu s':>8} {'ratio':>7} {'wall s':>8} {'ratio':>7}")
    for name, s in samples.items():
        cpu = statistics.median(c for c, _ in s)
        wall = statistics.median(w for _, w in s)
        rc = statistics.median(c / b[0] for (c, _), b in zip(s, base, strict=True))
        rw = statistics.median(w / b[1] for (_, w), b in zip(s, base, strict=True))
        print(f"{name:<20} {cpu:8.3f} {rc:7.3f} {wall:8.3f} {rw:7.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("gpt2", "engine", "both"), default="both")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    opts = parser.parse_args()
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1, 5, 15 min)")
    models = ("gpt2", "engine") if opts.model == "both" else (opts.model,)
    if "gpt2" in models and importlib.util.find_spec("transformers") is None:
        if opts.model == "gpt2":
            sys.exit("bench_long_run: --model gpt2 needs transformers (pip install transformers)")
        print("gpt2: skipped, transformers is not installed here (pip install transformers)")
        models = ("engine",)
    for model in models:
        bench(model, opts.rounds, opts.steps)


if __name__ == "__main__":
    main()
