"""Recording cost per rank on a 2-rank DDP run (gloo, CPU), by hand:

the same DDP training script (an MLP 784-512-512-10, batch 64 per rank, SGD, 300 steps) started
by torch's launcher as it is (``python -m torch.distributed.run ... script``) and under
``modscope record`` (``python -m torch.distributed.run ... -m modscope record --trace-file F
script``: every module, the parameter statistics and fingerprints, the trace file written on
the writer thread). The script times its own steps (``perf_counter`` around each one, the
first 20 left out as warm-up) and prints each rank's median, so process start, rendezvous and
imports are not counted. Launches alternate plain / recorded / plain (the A/A row compares the
two plain launches of a round), ``--rounds`` times; the table gives the median over rounds of
each rank's median step, and the ratios.

Run: ``.venv/bin/python bench/bench_ranks.py [--rounds 3] [--steps 300]``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SCRIPT = '''
import sys, time
import torch, torch.distributed as dist, torch.nn as nn

steps = int(sys.argv[1])
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
g = torch.Generator().manual_seed(rank)
x, y = torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g)
times = []
for step in range(steps):
    t0 = time.perf_counter()
    loss = nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    times.append(time.perf_counter() - t0)
times = sorted(times[20:])
print(f"STEP rank={rank} median_us={times[len(times) // 2] * 1e6:.1f}", flush=True)
dist.destroy_process_group()
'''


def launch(script: Path, steps: int, recorded: bool, folder: Path) -> dict[int, float]:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2", "--standalone"]
    if recorded:
        argv += ["-m", "modscope", "record", "--trace-file", str(folder / "bench.jsonl.gz")]
    argv += [str(script), str(steps)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"launch failed ({done.returncode}):\n{done.stderr[-3000:]}")
    found = {int(r): float(us) for r, us in re.findall(r"STEP rank=(\d+) median_us=([\d.]+)", done.stdout)}
    if sorted(found) != [0, 1]:
        raise SystemExit(f"no step times in the output:\n{done.stdout}")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=300)
    args = parser.parse_args()
    rows: dict[str, list[dict[int, float]]] = {"plain A": [], "recorded": [], "plain B": []}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        script = folder / "ddp_bench.py"
        script.write_text(SCRIPT)
        for i in range(args.rounds):
            for name in rows:
                rows[name].append(launch(script, args.steps, name == "recorded", folder))
                print(f"round {i + 1} {name}: " + ", ".join(f"rank {r} {us:.0f} us" for r, us in
                                                            sorted(rows[name][-1].items())), flush=True)
    print(f"\n2 ranks, gloo, CPU, one thread each, {args.steps} steps, median over {args.rounds} rounds of each "
          "rank's median step")
    print(f"{'':22}{'rank 0 (us)':>12}{'rank 1 (us)':>12}{'ratio r0':>10}{'ratio r1':>10}")
    base = {r: statistics.median(run[r] for run in rows["plain A"]) for r in (0, 1)}
    for name, label in (("plain A", "plain"), ("plain B", "plain again (A/A)"), ("recorded", "modscope record")):
        med = {r: statistics.median(run[r] for run in rows[name]) for r in (0, 1)}
        print(f"{label:22}{med[0]:12.0f}{med[1]:12.0f}{med[0] / base[0]:10.3f}{med[1] / base[1]:10.3f}")


if __name__ == "__main__":
    main()
