"""How far the ``params`` event's sampled figures are from the truth (issue 31): a floating-point
tensor of more than ``SAMPLE`` values has its norm, mean and std estimated from the sample its
update ratio is measured on (``capture.param_stats``); this measures the estimates' error
against float64 over every value, by hand. Not a speed figure: one pass, deterministic.

Cases:

- ``zoo``: every sampled parameter of ViT-B/16, GPT-2 and BERT (``bench_zoo``'s seeded
  models) after ``--steps`` SGD steps of ``bench_zoo``'s training step (needs the bench venv:
  torchvision, transformers; skipped, saying so, without them);
- ``ramp``: ``tests/capture/torch/test_sampled_update.py``'s ``big_step`` (1M and 2.4M values,
  0.02-wide around 0.003, after a step whose gradient grows 30x along the tensor);
- ``heavy``: GPT-2-sized weights (768x3072, 768x768) after 30 SGD steps whose gradient is a batch
  of 8 outer products of heavy-tailed (Student t, 3) vectors, a Linear's;
- ``rows``: a 50257x768 embedding whose rows are scaled by log-normal factors (sigma 1: a few
  rows 10x the typical one, as a trained embedding's frequent tokens), the worst case for an
  evenly spread sample.

Per case, over its tensors: the median and largest relative error of the norm and the std, and
of the mean relative to the std (a weight's mean is near zero: its error relative to the mean
itself says nothing).

Run: ``OMP_NUM_THREADS=1 .venv-zoo/bin/python bench/accuracy_sampled_stats.py [--steps 3]``
(``.venv`` runs every case but ``zoo``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from modscope.capture import param_stats as ps  # noqa: E402


def errors(values: np.ndarray) -> tuple[float, float, float] | None:
    """(norm, mean / std, std) relative errors of the plan's sampled figures for ``values``
    (None: not sampled), the plan's own numbers against float64 over every value."""
    t = _Tensor(np.ascontiguousarray(values, np.float32))
    rec = ps.StatsPlan([t]).stats(["w"])[0]
    if "stats_sampled" not in rec:
        return None
    a = t._data.reshape(-1).astype(np.float64)
    norm, mean, std = float(np.sqrt(a @ a)), float(a.mean()), float(a.std())
    return abs(rec["norm"] / norm - 1), abs(rec["mean"] - mean) / std, abs(rec["std"] / std - 1)


class _Tensor:
    __slots__ = ("_data", "_grad")

    def __init__(self, data: np.ndarray) -> None:
        self._data, self._grad = data, None


def report(name: str, rows: list[tuple[float, float, float]]) -> None:
    cols = list(zip(*rows))
    cells = " | ".join(f"{statistics.median(c):.2%} / {max(c):.2%}" for c in cols)
    print(f"| {name} | {len(rows)} | {cells} |", flush=True)


def big_step(n: int, seed: int) -> np.ndarray:
    """``test_sampled_update.big_step``'s values after the SGD step."""
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(n) * 0.02 + 0.003).astype(np.float32)
    g = (rng.standard_normal(n) * np.linspace(0.1, 3.0, n)).astype(np.float32)
    return (w - 0.01 * g).astype(np.float32)


def heavy(shape: tuple[int, int], seed: int, steps: int = 30) -> np.ndarray:
    rng = np.random.default_rng(seed)
    w = (rng.standard_normal(shape) * 0.02).astype(np.float32)
    for _ in range(steps):
        a = rng.standard_t(3, (8, shape[0])).astype(np.float32)
        b = rng.standard_t(3, (8, shape[1])).astype(np.float32)
        w -= np.float32(1e-3) * (a.T @ b) / 8
    return w


def rows(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    scale = np.exp(rng.standard_normal((50257, 1))).astype(np.float32)
    return (rng.standard_normal((50257, 768)).astype(np.float32) * 0.02) * scale


def zoo(steps: int) -> None:
    try:
        import bench_zoo as bz
    except ImportError as e:  # torchvision or transformers missing: the bench venv has them
        print(f"| zoo | skipped: {e} | | | |")
        return
    import warnings

    warnings.simplefilter("ignore")
    for entry in bz.zoo(False):
        if entry.name == "ResNet-50":
            continue  # its convolutions are 4-D blocks too, but the zoo's transformers are the case asked
        model = bz.seeded(entry)
        x, y = entry.inputs()
        step = bz.make_step(model, entry, x, y)
        for _ in range(steps):
            step()
        found = [e for p in model.parameters() if (e := errors(p.detach().numpy())) is not None]
        report(f"{entry.name}, {steps} SGD steps", found)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=3, help="SGD steps of each zoo model before measuring")
    args = ap.parse_args()
    print(f"SAMPLE={ps.SAMPLE:,} values in runs of {ps.RUN}; cells: median / largest over the tensors\n")
    print("| case | tensors | norm | mean (relative to the std) | std |")
    print("| --- | --- | --- | --- | --- |")
    report("ramp (1M, 2.4M values, 10 seeds)", [errors(big_step(n, s)) for n in (1_000_000, 2_359_296)
                                                 for s in range(10)])
    report("heavy-tailed SGD (768x3072, 768x768, 3 seeds)", [errors(heavy(shape, s)) for shape in ((768, 3072),
                                                             (768, 768)) for s in range(3)])
    report("embedding, log-normal row scales (50257x768, 3 seeds)", [errors(rows(s)) for s in range(3)])
    zoo(args.steps)


if __name__ == "__main__":
    main()
