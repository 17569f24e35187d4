"""What the ``params`` event costs per full step on a GPT-2 124M-sized parameter set, before and
after a change to ``capture.param_stats`` (issue 31: on real-sized models those statistics were
most of a full step's overhead), by hand.

One process, one thread: the 148 tensors of GPT-2 small (124M float32 values, with gradients)
as NumPy arrays, and per round, in a new random order, each arm's step:

- ``optimizer only``: an SGD step in place (``p -= lr * g``, one pass per tensor), untimed
  apart from itself: the figure the others are compared with;
- ``stats``: ``StatsPlan.snapshot`` before that step and ``StatsPlan.stats`` after it (what the
  optimizer hooks run), the two timed with ``time.thread_time`` and added up; twice
  (``stats (A/A)``: two plans of the same code, the noise of one against the other);
- ``stats (base)``, with ``--base DIR``: the same with ``capture/param_stats.py`` from another
  tree (``git archive <commit> modscope | tar -x -C DIR``).

The table gives per arm the median over rounds, in ms, and its ratio to ``stats``.

``--backend torch``: the same with torch tensors (parameters with gradients, the SGD step in
torch) and ``capture.torch.param_stats.TorchStatsPlan``, the plan for tensors NumPy cannot read
(other devices, bfloat16; here on the CPU, one thread); ``--base`` then loads that file from the
other tree. It holds three float64 copies of the parameters per plan before sampling, two and
the samples with the update sampled, one and the samples with the values' figures sampled too
(the default since issue 31; ``exact_stats=True``: two): up to ~3 GB per arm at GPT-2's size
(``--layers`` makes it smaller).

Run: ``OMP_NUM_THREADS=1 .venv/bin/python bench/bench_param_stats.py [--rounds 9] [--base DIR]
[--backend numpy|torch] [--layers 12]``
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modscope.capture import param_stats  # noqa: E402


def gpt2_shapes(layers: int = 12, d: int = 768, vocab: int = 50257, ctx: int = 1024) -> list[tuple[int, ...]]:
    """The parameter shapes of GPT-2 small (transformers' ``GPT2LMHeadModel``, tied head)."""
    shapes: list[tuple[int, ...]] = [(vocab, d), (ctx, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    return shapes + [(d,), (d,)]


class _Array:
    __slots__ = ("_data",)

    def __init__(self, data: np.ndarray) -> None:
        self._data = data


class _Param:
    """A tensor as ``StatsPlan`` reads it: ``_data`` and ``_grad._data``."""

    __slots__ = ("_data", "_grad")

    def __init__(self, data: np.ndarray, grad: np.ndarray) -> None:
        self._data, self._grad = data, _Array(grad)


def load_base(base: Path, backend: str = "numpy") -> Any:
    """``capture/param_stats.py`` (``capture/torch/param_stats.py`` for ``backend`` torch) of the
    tree at ``base``, as a module of its own (its relative imports from this tree)."""
    name = "torch/param_stats.py" if backend == "torch" else "param_stats.py"
    source = (base / "modscope" / "capture" / name).read_text()
    for old, new in (("from ...events.schema import", "from modscope.events.schema import"),
                     ("from ..events.schema import", "from modscope.events.schema import"),
                     ("from ..param_stats import", "from modscope.capture.param_stats import"),
                     ("from .summaries import", "from modscope.capture.torch.summaries import")):
        source = source.replace(old, new)
    spec = importlib.util.spec_from_loader("base_param_stats", loader=None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(source, str(base / name), "exec"), module.__dict__)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--base", type=Path, help="a tree whose modscope/capture/param_stats.py is the base")
    parser.add_argument("--backend", choices=["numpy", "torch"], default="numpy",
                        help="numpy: StatsPlan (the engine, torch CPU); torch: TorchStatsPlan (other devices)")
    parser.add_argument("--layers", type=int, default=12, help="GPT-2's transformer blocks (12: GPT-2 small)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    shapes = gpt2_shapes(layers=args.layers)
    values = [(rng.standard_normal(s, np.float32) * 0.02, rng.standard_normal(s, np.float32) * 1e-3) for s in shapes]
    if args.backend == "torch":
        import torch

        from modscope.capture.torch import param_stats as torch_param_stats

        torch.set_num_threads(1)
        params: list[Any] = []
        for v, g in values:
            p = torch.nn.Parameter(torch.from_numpy(v))
            p.grad = torch.from_numpy(g)
            params.append(p)
        plan_class = torch_param_stats.TorchStatsPlan
        base_class = load_base(args.base, "torch").TorchStatsPlan if args.base else None

        def sgd() -> float:
            t0 = time.thread_time()
            with torch.no_grad():
                for p in params:
                    p.sub_(p.grad, alpha=1e-3)
            return time.thread_time() - t0
    else:
        params = [_Param(v, g) for v, g in values]
        plan_class = param_stats.StatsPlan
        base_class = load_base(args.base).StatsPlan if args.base else None

        def sgd() -> float:
            t0 = time.thread_time()
            for p in params:
                p._data -= 1e-3 * p._grad._data
            return time.thread_time() - t0
    del values
    n = sum(int(np.prod(s)) for s in shapes)
    print(f"{len(params)} tensors, {n / 1e6:.1f}M values, {plan_class.__name__}, one thread")
    paths = [f"p{i}" for i in range(len(params))]
    arms: dict[str, Any] = {"stats": plan_class(params), "stats (A/A)": plan_class(params)}
    if base_class is not None:
        arms["stats (base)"] = base_class(params)

    times: dict[str, list[float]] = {name: [] for name in ["optimizer only", *arms]}
    for r in range(args.rounds + 1):  # round 0: warm-up (each plan's buffers made), not counted
        order = list(times)
        random.shuffle(order)
        for name in order:
            if name == "optimizer only":
                spent = sgd()
            else:
                plan = arms[name]
                t0 = time.thread_time()
                plan.snapshot()
                spent = time.thread_time() - t0
                sgd()
                t0 = time.thread_time()
                plan.stats(paths)
                spent += time.thread_time() - t0
            if r:
                times[name].append(spent)
    ref = statistics.median(times["stats"])
    print(f"{'arm':<16}{'median ms':>11}{'/ stats':>9}   (rounds: {args.rounds})")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:<16}{m * 1e3:>11.1f}{m / ref:>9.2f}")


if __name__ == "__main__":
    main()
