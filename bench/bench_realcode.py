"""The project's real-code scripts (tests/realcode/scripts/*.py) trained under torch and under
``import engine as torch``: the engine's training loop time against torch's, per script.

Each candidate runs in a worker process of its own, as a user runs a script: the engine's worker
never imports torch (Python's garbage collector would otherwise walk torch's ~140,000 Python
objects on every full collection the engine's graph objects trigger, a cost no engine user pays).
Candidates: torch, a second torch worker (the A/A row: its ratio to the first is the noise
floor), the engine, and with ``--baseline DIR`` the engine of another source tree (e.g. a
``git archive`` of an older commit), so before/after figures come from the same run.

Scripts are loaded the way ``tests/realcode/_harness.py`` loads them (as written, or with their
torch imports naming the engine). The torch worker builds the model (``torch.manual_seed(0)``)
and hands its weights to the others through an ``.npz`` file; every worker keeps those weights
and resets its model to them, and its library's seed to 0, before each timed call, so every
round trains the same steps from the same point on the same data.

What is timed is one call of the script's own ``train(model, data, steps)``: its optimizer and
scheduler set-up, its DataLoader, every step and whatever evaluation it does, as a user runs it;
in each worker's own thread CPU time, one BLAS/OpenMP thread (``_common``), so other processes'
load stays out. Candidates take turns round by round in a seeded random order; a script's ratio
is the median over rounds of that round's engine / torch (a round's candidates see the same
machine state: steadier than a ratio of medians while the machine drifts).

Run: ``.venv/bin/python bench/bench_realcode.py`` (9 rounds, the tests' step counts; about ten
minutes), ``--quick`` (3 rounds, at most 3 steps per call; a few minutes), ``--only
mnist_cnn,word_lm``, ``--baseline /tmp/old_tree``, ``--profile NAME`` (cProfile of the engine's
loop of one script, in this process: where its Python time goes).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = Path(__file__).resolve().parent

# training steps per call: the counts tests/realcode/test_realcode.py trains (the slow convs few)
STEPS = {"mnist_cnn": 3, "mingpt": 30, "checkpoint_resume": 4, "mobilenetv2": 4, "unet": 4,
         "tabular_ctr": 8, "ppo_continuous": 10}
DEFAULT_STEPS = 6

# both libraries warn alike about some scripts' options (see test_realcode.py); not the subject
for _pattern in ("enable_nested_tensor is True", "Support for mismatched key_padding_mask",
                 ".*torch.cuda.amp.GradScaler"):
    warnings.filterwarnings("ignore", message=_pattern)


def script_names(root: Path = ROOT) -> list[str]:
    return sorted(p.stem for p in (root / "tests/realcode/scripts").glob("*.py") if not p.stem.startswith("_"))


# --- the worker: one library, one script, timed calls on request ---------------------------------

def _import_tree(root: Path) -> Any:
    """The harness of source tree ``root`` (its engine, its scripts), one BLAS thread."""
    sys.path[:0] = [str(BENCH), str(root)]
    import _common  # noqa: F401  (pins BLAS threads before NumPy loads)

    from tests.realcode import _harness
    return _harness


def worker(backend: str, root: Path) -> None:
    """Serve requests on stdin, one a line: ``load NAME STEPS WEIGHTS save|use`` builds script
    NAME's model (``save``: writes its weights to WEIGHTS; ``use``: loads them from there), runs
    one warm-up call and says ``ready``; ``run`` resets the model, times one ``train()`` call and
    prints its seconds."""
    h = _import_tree(root)
    import numpy as np

    if backend == "torch":
        import torch as lib
        lib.set_num_threads(1)
    else:
        import engine as lib
        assert "torch" not in sys.modules, "the engine's worker must not import torch"
    call = None
    for line in sys.stdin:
        words = line.split()
        if words[0] == "load":
            name, steps, weights, mode = words[1], int(words[2]), words[3], words[4]
            call = _loaded(h, lib, np, backend, name, steps, weights, mode == "save")
            call()  # warm-up: caches, lazy modules' first shapes
            print("ready", flush=True)
        elif words[0] == "run":
            print(repr(call()), flush=True)


def _loaded(h: Any, lib: Any, np: Any, backend: str, name: str, steps: int, weights: str, save: bool):
    module = h.load(name, backend)
    data = module.get_data()
    lib.manual_seed(0)
    model = module.build()
    if save:
        np.savez(weights, **{k: v.detach().cpu().numpy() for k, v in model.state_dict().items()})
    else:
        with np.load(weights) as arrays:
            model.load_state_dict({k: lib.from_numpy(arrays[k].copy()) for k in arrays.files})
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def call() -> float:
        model.load_state_dict(initial)
        lib.manual_seed(0)
        start = time.thread_time()
        module.train(model, data, steps)
        return time.thread_time() - start

    return call


class Worker:
    """A worker process (see ``worker``) for one library of one source tree, kept across scripts."""

    def __init__(self, backend: str, root: Path) -> None:
        cmd = [sys.executable, __file__, "--worker", backend, "--root", str(root)]
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     env=env, cwd=str(root))
        self.label = f"{backend}@{root}"

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def answer(self) -> str:
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {self.label} stopped; see its stderr above")
        return line.strip()

    def load(self, name: str, steps: int, weights: Path, save: bool) -> None:
        self.send(f"load {name} {steps} {weights} {'save' if save else 'use'}")

    def run(self) -> float:
        self.send("run")
        return float(self.answer())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def measure(workers: dict[str, Worker], name: str, steps: int, rounds: int) -> dict[str, list[float]]:
    """Seconds (each worker's thread CPU) per call of each candidate, per round."""
    with tempfile.TemporaryDirectory() as tmp:
        weights = Path(tmp) / "weights.npz"
        workers["torch"].load(name, steps, weights, save=True)
        if workers["torch"].answer() != "ready":  # its weights are on disk now
            raise RuntimeError("the torch worker did not get ready")
        others = [w for k, w in workers.items() if k != "torch"]
        for w in others:
            w.load(name, steps, weights, save=False)
        for w in others:
            if w.answer() != "ready":
                raise RuntimeError(f"worker {w.label} did not get ready")
    samples: dict[str, list[float]] = {k: [] for k in workers}
    order, shuffle = list(workers.items()), random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for key, w in order:
            samples[key].append(w.run())
    return samples


def round_ratios(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def profile(name: str, steps: int, calls: int, top: int) -> None:
    """cProfile of ``calls`` engine calls of script ``name``: own time and cumulative time per function."""
    h = _import_tree(ROOT)
    import engine

    module = h.load(name, "engine")
    data = module.get_data()
    engine.manual_seed(0)
    model = module.build()
    initial = {k: v.detach().clone() for k, v in model.state_dict().items()}
    module.train(model, data, steps)
    # this thread's CPU time, not wall time: on a loaded machine a preempted op would otherwise
    # be charged for the time other processes held the CPU
    profiler = cProfile.Profile(time.thread_time)
    for _ in range(calls):
        model.load_state_dict(initial)
        engine.manual_seed(0)
        profiler.enable()
        module.train(model, data, steps)
        profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds, at most 3 steps per call")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per script (default 9, quick 3)")
    parser.add_argument("--only", default="", help="comma-separated script names (default: all)")
    parser.add_argument("--baseline", type=Path, default=None, metavar="DIR",
                        help="also time the engine of this source tree (a checkout of another commit)")
    parser.add_argument("--profile", default="", metavar="NAME", help="cProfile the engine on one script")
    parser.add_argument("--top", type=int, default=35, help="rows of the profile")
    # the worker's own arguments (the parent passes them)
    parser.add_argument("--worker", choices=("torch", "engine"), help=argparse.SUPPRESS)
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.worker:
        worker(args.worker, args.root.resolve())
        return
    known = script_names()
    cap = 3 if args.quick else 10**9
    steps_of = {n: min(STEPS.get(n, DEFAULT_STEPS), cap) for n in known}
    names = [n for n in args.only.split(",") if n] or ([args.profile] if args.profile else known)
    unknown = sorted(set(names) - set(known))
    if unknown:
        raise SystemExit(f"unknown script(s) {unknown}; known: {', '.join(known)}")
    if args.profile:
        profile(args.profile, steps_of[args.profile], 3, args.top)
        return
    try:
        import torch
    except ImportError:
        raise SystemExit("torch is not installed: nothing to compare against (pip install torch)") from None
    baseline = args.baseline.resolve() if args.baseline else None
    rounds = args.rounds or (3 if args.quick else 9)

    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print(f"{len(names)} scripts, {rounds} rounds, one thread each, torch {torch.__version__}, load average "
          f"{load}; ms = a worker's thread CPU per train() call" + (f"; baseline = engine of {baseline}"
                                                                   if baseline else ""))
    cols = ["torch ms", "engine ms", "engine/torch", "A/A"] + (["baseline/torch"] if baseline else [])
    header = f"{'script':<20} {'steps':>5} " + " ".join(f"{c:>{max(len(c), 6)}}" for c in cols)
    print(header)
    print("-" * len(header))
    ratios: dict[str, dict[str, float]] = {"engine": {}, "torch A/A": {}, "baseline": {}}
    workers = {"torch": Worker("torch", ROOT), "torch A/A": Worker("torch", ROOT), "engine": Worker("engine", ROOT)}
    if baseline is not None:
        workers["baseline"] = Worker("engine", baseline)
    try:
        for name in names:
            report(name, steps_of[name], measure(workers, name, steps_of[name], rounds), ratios, cols, baseline)
    finally:
        for w in workers.values():
            w.close()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    print("-" * len(header))
    for key, label in (("engine", "engine/torch"), ("baseline", "baseline/torch"), ("torch A/A", "A/A torch/torch")):
        r = ratios[key]
        if r:
            worst = max(r, key=lambda n: abs(r[n] - 1.0))
            print(f"{label:<16} median {statistics.median(r.values()):.2f}, max {max(r.values()):.2f}, "
                  f"farthest from 1: {r[worst]:.2f} ({worst})")
    print(f"load average at the end {load}")


def report(name: str, steps: int, samples: dict[str, list[float]], ratios: dict, cols: list[str],
           baseline: Path | None) -> None:
    """One row of the table; the script's ratios go into ``ratios``."""
    for key in ratios:
        if key in samples:
            ratios[key][name] = round_ratios(samples[key], samples["torch"])
    cells = [statistics.median(samples["torch"]) * 1e3, statistics.median(samples["engine"]) * 1e3,
             ratios["engine"][name], ratios["torch A/A"][name]] + ([ratios["baseline"][name]] if baseline else [])
    fmt = ["{:.1f}", "{:.1f}", "{:.2f}", "{:.2f}", "{:.2f}"]
    print(f"{name:<20} {steps:>5} " + " ".join(
        f"{f.format(v):>{max(len(c), 6)}}" for f, v, c in zip(fmt, cells, cols)), flush=True)


if __name__ == "__main__":
    main()
