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
to its ``4 no-op hooks`` (``/ floor``).

Run: ``.venv/bin/python bench/bench_full_detail.py [--rounds 5] [--steps 60] [--base DIR]``
(needs transformers).
"""

from __future__ import annotations

import argparse
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
        cands = variants(script, opts.steps, folder, opts.base)
        samples: dict[str, list[float]] = {name: [] for name in cands}
        order = list(cands)
        shuffle = random.Random(0).shuffle
        for r in range(opts.rounds):
            shuffle(order)
            for name in order:
                samples[name].append(cands[name]())
            print(f"  round {r + 1}/{opts.rounds} done", file=sys.stderr, flush=True)
        table(samples)
    load = os.getloadavg()
    print(f"load after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
