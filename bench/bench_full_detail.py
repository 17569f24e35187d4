"""What a full-detail step costs against the hook floor (issue 31: full steps <= 1.10x the same step
with four no-op torch hooks per module), and what a change to capture did to it, by hand.

The GPT-2 loop of ``bench_long_run`` (its ``SCRIPT``: 60 steps, small config, one thread, timed
by the script around the loop) launched in a fresh process per run:

- ``plain``, twice (``plain A/A``: the noise of one launch against another);
- ``4 no-op hooks``: forward pre, forward, full backward pre and full backward on every module;
- ``record --full``: ``python -m modscope record --full --trace-file F`` (every step in full,
  events to a gzip file on the writer's thread: its work counts in the process's CPU time);
- ``record --full (base)``, with ``--base DIR``: the same, importing modscope from another tree
  (``git archive <commit> | tar -x -C DIR``): before and after a change, in one run.

Launches run in rounds, each in a new random order; the table gives per variant the median over
rounds of the loop's CPU time and the median of the per-round ratios to that round's ``plain`` and
to its ``4 no-op hooks`` (``/ floor``). The loop's time includes the first step of the trace
(start, graph event: ``bench_first_step``'s subject), ~3 plain steps' worth.

The steady state, without the first step: ``steady``, one more launch per round (and one with
``--base``) that runs the same model four times in one process (deep copies: plain, plain A/A,
no-op hooks, ``modscope.trace`` started and kept open, every step full) after warm-up steps,
interleaved step by step in a new random order each round (``--steady-steps`` rounds), and
prints the median thread CPU time of each; the table gives the medians over launches of its
ratios.

Run: ``.venv/bin/python bench/bench_full_detail.py [--rounds 5] [--steps 60] [--base DIR]``
(needs transformers).
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import _common  # noqa: F401 - one BLAS thread, before NumPy or torch
import bench_long_run

ROOT = Path(__file__).resolve().parent.parent
_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        # compiled bytecode, as an installed package reads it (see bench_long_run)
        "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "modscope-bench-pycache"),
        "PYTHONDONTWRITEBYTECODE": ""}


def launch(cmd: list[str], what: str, tree: Path) -> float:
    """The loop's CPU time (s) of one launch, importing modscope from ``tree``."""
    env = {**os.environ, **_ENV, "PYTHONPATH": str(tree)}
    env.pop("MODSCOPE_DETAIL", None)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return bench_long_run._parse(proc.stdout + proc.stderr, what)[0]


STEADY = '''
import copy, os, random, statistics, sys, time, warnings
import torch
from transformers import GPT2Config, GPT2LMHeadModel
from transformers.utils import logging
import modscope
logging.set_verbosity_error()
warnings.simplefilter("ignore")  # torch: hooks on a module returning a ModelOutput never fire
torch.set_num_threads(1)
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=128, n_head=4, n_positions=64, vocab_size=1000))
x = torch.randint(0, 1000, (8, 64))
def make():
    m = copy.deepcopy(model)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3)
    def step():
        out = m(x, labels=x)
        opt.zero_grad()
        out.loss.backward()
        opt.step()
    return m, step
arms = {name: make() for name in ("plain", "plain A/A", "floor", "full")}
def noop(*args):
    return None
for mod in arms["floor"][0].modules():
    mod.register_forward_pre_hook(noop)
    mod.register_forward_hook(noop)
    mod.register_full_backward_pre_hook(noop)
    mod.register_full_backward_hook(noop)
trace = modscope.trace(arms["full"][0]).start()
for _ in range(3):
    for _, step in arms.values():
        step()
times = {name: [] for name in arms}
order, shuffle = list(arms), random.Random(int(sys.argv[2])).shuffle
for _ in range(int(sys.argv[1])):
    shuffle(order)
    for name in order:
        t = time.thread_time()
        arms[name][1]()
        times[name].append(time.thread_time() - t)
trace.stop()
med = {name: statistics.median(v) for name, v in times.items()}
print("STEADY " + " ".join(f"{name.replace(' ', '_')}={v:.6f}" for name, v in med.items()), flush=True)
'''


def steady(script: str, steps: int, seed: int, *, tree: Path, what: str) -> dict[str, float]:
    """Median thread CPU seconds of a step per arm (plain, plain_A/A, floor, full), in one process."""
    env = {**os.environ, **_ENV, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, script, str(steps), str(seed)], capture_output=True, text=True, env=env,
                          timeout=1800)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("STEADY ")), None)
    if proc.returncode != 0 or line is None:
        raise RuntimeError(f"{what} failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    return {k: float(v) for k, v in (item.split("=") for item in line.split()[1:])}


def variants(script: str, steps: int, folder: str, base: Path | None) -> dict[str, callable]:
    py = sys.executable
    args = ["gpt2", str(steps)]
    trace = os.path.join(folder, "gpt2.jsonl.gz")

    def record(tree: Path, what: str):
        return lambda: launch([py, "-m", "modscope", "record", "--full", "--trace-file", trace, script, *args,
                               "none"], what, tree)

    out = {
        "plain": lambda: launch([py, script, *args, "none"], "plain", ROOT),
        "plain A/A": lambda: launch([py, script, *args, "none"], "plain A/A", ROOT),
        "4 no-op hooks": lambda: launch([py, script, *args, "hooks"], "4 no-op hooks", ROOT),
        "record --full": record(ROOT, "record --full"),
    }
    if base is not None:
        out["record --full (base)"] = record(base, "record --full (base)")
    return out


def steady_table(runs: dict[str, list[dict[str, float]]]) -> None:
    print(f"\nsteady state, in one process ({len(next(iter(runs.values())))} launches; medians of their "
          "ratios; step: median thread CPU ms)")
    print(f"{'tree':<22} {'plain ms':>9} {'A/A':>7} {'floor':>7} {'full':>7} {'full / floor':>13}")
    for name, rs in runs.items():
        plain = statistics.median(r["plain"] for r in rs)
        aa, floor, full, over = (statistics.median(r[a] / r[b] for r in rs) for a, b in
                                 (("plain_A/A", "plain"), ("floor", "plain"), ("full", "plain"), ("full", "floor")))
        print(f"{name:<22} {plain * 1e3:9.2f} {aa:7.3f} {floor:7.3f} {full:7.3f} {over:13.3f}", flush=True)


def table(samples: dict[str, list[float]]) -> None:
    plain, floor = samples["plain"], samples["4 no-op hooks"]
    print(f"\ngpt2: {len(plain)} rounds (median; ratios: medians of per-round ratios)")
    print(f"{'variant':<22} {'cpu s':>8} {'/ plain':>8} {'/ floor':>8}")
    for name, s in samples.items():
        rp = statistics.median(c / b for c, b in zip(s, plain, strict=True))
        rf = statistics.median(c / b for c, b in zip(s, floor, strict=True))
        print(f"{name:<22} {statistics.median(s):8.3f} {rp:8.3f} {rf:8.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--base", type=Path, help="another modscope tree, for a 'record --full (base)' row")
    parser.add_argument("--steady-steps", type=int, default=20, help="interleaved rounds of the steady launch")
    parser.add_argument("--steady-only", action="store_true", help="only the steady launches (a loaded machine)")
    opts = parser.parse_args()
    if importlib.util.find_spec("transformers") is None:
        sys.exit("bench_full_detail: needs transformers (pip install transformers)")
    if opts.base is not None and not (opts.base / "modscope" / "__init__.py").is_file():
        sys.exit(f"bench_full_detail: --base {opts.base}: no modscope package there")
    load = os.getloadavg()
    print(f"load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1, 5, 15 min)")
    with tempfile.TemporaryDirectory(prefix="bench-full-detail-") as folder:
        script = os.path.join(folder, "train.py")
        Path(script).write_text(bench_long_run.SCRIPT)
        steady_script = os.path.join(folder, "steady.py")
        Path(steady_script).write_text(STEADY)
        cands = {} if opts.steady_only else variants(script, opts.steps, folder, opts.base)
        trees = {"steady": ROOT, **({"steady (base)": opts.base} if opts.base is not None else {})}
        for name, tree in trees.items():
            cands[name] = functools.partial(steady, steady_script, opts.steady_steps, tree=tree, what=name)
        samples: dict[str, list[float]] = {name: [] for name in cands if name not in trees}
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        order = list(cands)
        shuffle = random.Random(0).shuffle
        for r in range(opts.rounds):
            shuffle(order)
            for name in order:
                if name in trees:
                    runs[name].append(cands[name](r))
                else:
                    samples[name].append(cands[name]())
            print(f"  round {r + 1}/{opts.rounds} done", file=sys.stderr, flush=True)
        if samples:
            table(samples)
        steady_table(runs)
    load = os.getloadavg()
    print(f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
