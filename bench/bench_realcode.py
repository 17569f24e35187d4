"""The project's real-code scripts (tests/realcode/scripts/*.py) trained under torch and under
``import engine as torch``: the engine's training loop time against torch's, per script.

Each script is loaded twice the way ``tests/realcode/_harness.py`` loads it (as written, and with
its torch imports naming the engine), plus a second, independent torch copy: the A/A candidate,
whose ratio to the first torch copy is the noise floor of the figures. The engine's model starts
from torch's weights (copied through NumPy), both see the same data, and before every timed call
each model is reset to those weights, so every round trains the same steps from the same point.

What is timed is one call of the script's own ``train(model, data, steps)``: its optimizer and
scheduler set-up, its DataLoader, every step, and whatever evaluation it does, as a user runs it.
Candidates are interleaved round by round in a seeded random order, one BLAS/OpenMP thread each,
timed by this thread's CPU time (``_common``: other processes' load stays out of it). The ratio
of a script is the median over rounds of that round's engine / torch (a round's candidates see
the same machine state, steadier than a ratio of medians while the machine drifts).

Run: ``.venv/bin/python bench/bench_realcode.py`` (full: 9 rounds; about ten minutes on a quiet
machine), ``--quick`` (3 rounds, fewer steps, a few minutes), ``--only mnist_cnn,word_lm``,
``--profile NAME`` (cProfile of the engine's loop of one script: where its Python time goes).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import random
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT))

import _common  # noqa: E402, F401  (pins BLAS threads before NumPy loads)

import engine  # noqa: E402
from tests.realcode import _harness as h  # noqa: E402

# training steps per call: the counts tests/realcode/test_realcode.py trains (the slow convs few)
STEPS = {"mnist_cnn": 3, "mingpt": 30, "checkpoint_resume": 4, "mobilenetv2": 4, "unet": 4,
         "tabular_ctr": 8, "ppo_continuous": 10}
DEFAULT_STEPS = 6

# both libraries warn alike about some scripts' options (see test_realcode.py); not the subject
for _pattern in ("enable_nested_tensor is True", "Support for mismatched key_padding_mask",
                 ".*torch.cuda.amp.GradScaler"):
    warnings.filterwarnings("ignore", message=_pattern)


class Candidate:
    """One library's copy of a script: its module, its model and the weights every call starts from."""

    def __init__(self, lib: Any, module: Any, model: Any, data: Any, steps: int) -> None:
        self.lib, self.module, self.model, self.data, self.steps = lib, module, model, data, steps
        self.initial = {k: v.detach().clone() for k, v in model.state_dict().items()}

    def reset(self) -> None:
        self.model.load_state_dict(self.initial)
        self.lib.manual_seed(0)

    def run(self) -> list[float]:
        return self.module.train(self.model, self.data, self.steps)


def candidates(torch: Any, name: str, steps: int) -> dict[str, Candidate]:
    """torch, its A/A copy and the engine for script ``name``, from the same weights and data."""
    t_mod, aa_mod, e_mod = h.load(name, "torch"), h.load(name, "torch"), h.load(name, "engine")
    data = t_mod.get_data()
    torch.manual_seed(0)
    t_model = t_mod.build()
    torch.manual_seed(0)
    aa_model = aa_mod.build()
    aa_model.load_state_dict(t_model.state_dict())
    engine.manual_seed(0)
    e_model = e_mod.build()
    h.copy_state(t_model, e_model)
    return {"torch": Candidate(torch, t_mod, t_model, data, steps),
            "torch A/A": Candidate(torch, aa_mod, aa_model, data, steps),
            "engine": Candidate(engine, e_mod, e_model, data, steps)}


def measure(cands: dict[str, Candidate], rounds: int) -> dict[str, list[float]]:
    """Seconds (thread CPU) per call of each candidate, per round, in a new seeded order each round."""
    for cand in cands.values():  # warm-up: imports, caches, lazy modules' first shapes
        cand.reset()
        cand.run()
    samples: dict[str, list[float]] = {k: [] for k in cands}
    order, shuffle = list(cands.items()), random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for key, cand in order:
            cand.reset()
            start = time.thread_time()
            cand.run()
            samples[key].append(time.thread_time() - start)
    return samples


def round_ratios(a: list[float], b: list[float]) -> float:
    return statistics.median(x / y for x, y in zip(a, b))


def profile(torch: Any, name: str, steps: int, calls: int, top: int) -> None:
    """cProfile of ``calls`` engine calls of script ``name``: own time and cumulative time per function."""
    cand = candidates(torch, name, steps)["engine"]
    cand.reset()
    cand.run()
    profiler = cProfile.Profile()
    for _ in range(calls):
        cand.reset()
        profiler.enable()
        cand.run()
        profiler.disable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds, at most 3 steps per call")
    parser.add_argument("--rounds", type=int, default=None, help="rounds per script (default 9, quick 3)")
    parser.add_argument("--only", default="", help="comma-separated script names (default: all)")
    parser.add_argument("--profile", default="", metavar="NAME", help="cProfile the engine on one script")
    parser.add_argument("--top", type=int, default=35, help="rows of the profile")
    args = parser.parse_args()

    torch = _common.try_torch()
    if torch is None:
        print("torch is not installed: nothing to compare against (pip install torch)")
        return
    cap = 3 if args.quick else None
    steps_of = {n: min(STEPS.get(n, DEFAULT_STEPS), cap or 10**9) for n in h.NAMES}
    if args.profile:
        profile(torch, args.profile, steps_of[args.profile], 3, args.top)
        return
    rounds = args.rounds or (3 if args.quick else 9)
    names = [n for n in args.only.split(",") if n] or h.NAMES
    unknown = sorted(set(names) - set(h.NAMES))
    if unknown:
        raise SystemExit(f"unknown script(s) {unknown}; known: {', '.join(h.NAMES)}")

    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"{len(names)} scripts, {rounds} rounds, one thread (torch {torch.__version__}), "
          f"load average {' '.join(load)}; times are thread CPU ms per train() call")
    header = f"{'script':<20} {'steps':>5} {'torch ms':>9} {'engine ms':>10} {'engine/torch':>13} {'A/A':>6}"
    print(header)
    print("-" * len(header))
    ratios, aas = {}, {}
    for name in names:
        samples = measure(candidates(torch, name, steps_of[name]), rounds)
        ratios[name] = round_ratios(samples["engine"], samples["torch"])
        aas[name] = round_ratios(samples["torch A/A"], samples["torch"])
        print(f"{name:<20} {steps_of[name]:>5} {statistics.median(samples['torch']) * 1e3:>9.1f} "
              f"{statistics.median(samples['engine']) * 1e3:>10.1f} {ratios[name]:>13.2f} {aas[name]:>6.2f}",
              flush=True)
    worst = max(ratios, key=ratios.get)
    aa_far = max(aas.values(), key=lambda r: abs(r - 1.0))
    print("-" * len(header))
    print(f"engine/torch: median {statistics.median(ratios.values()):.2f}, max {ratios[worst]:.2f} ({worst}); "
          f"A/A (torch/torch): median {statistics.median(aas.values()):.2f}, farthest from 1 {aa_far:.2f}")


if __name__ == "__main__":
    main()
