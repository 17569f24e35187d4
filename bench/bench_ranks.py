"""Recording cost per rank on a 2-rank DDP run (gloo, CPU), by hand:

the same DDP training script (an MLP 784-512-512-10, batch 64 per rank, SGD, 300 steps) started
by torch's launcher as it is (``python -m torch.distributed.run ... script``) and under
``modscope record`` (``python -m torch.distributed.run ... -m modscope record --trace-file F
script``: every module, the parameter statistics and fingerprints, the trace file written on
the writer thread). The script times its own steps (``perf_counter`` around each one, the
first 20 left out as warm-up) and prints each rank's median, so process start, rendezvous and
imports are not counted. Launches alternate plain / recorded / plain (the A/A row compares the
two plain launches of a round), ``--rounds`` times; the table gives the median over rounds of
each rank's median step, and the median over rounds of the ratios paired within a round (the
machine's load changes between rounds more than between the launches of one round).

``--in-process``: the same step in one process without DDP, plain and traced copies interleaved
step by step, as a single process and as rank 0 of 2 (the fingerprints' share).

Run: ``.venv/bin/python bench/bench_ranks.py [--rounds 3] [--steps 300] [--in-process]``.
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


IN_PROCESS = '''
import os, statistics, sys, time
import torch, torch.nn as nn
torch.set_num_threads(1)
import modscope

def make():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return m, torch.optim.SGD(m.parameters(), lr=0.01)

x, y = torch.randn(64, 784), torch.randint(0, 10, (64,))
(a, oa), (b, ob), (c, oc) = make(), make(), make()

def step(m, o):
    loss = nn.functional.cross_entropy(m(x), y)
    o.zero_grad(); loss.backward(); o.step()

tr = modscope.trace(b).start()
times = {"a": [], "b": [], "c": []}
for i in range(int(sys.argv[1])):
    for name, m, o in (("a", a, oa), ("b", b, ob), ("c", c, oc)):
        t0 = time.perf_counter(); step(m, o); times[name].append(time.perf_counter() - t0)
tr.stop()
print(" ".join(f"{k}={statistics.median(v[20:]) * 1e6:.1f}" for k, v in times.items()))
'''


def in_process(steps: int, rank: bool) -> dict[str, float]:
    """The same model and step in one process, no process group: copies a (plain), b (traced),
    c (plain again: the A/A) interleaved step by step; ``rank``: as rank 0 of 2 (fingerprints on)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for key in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        env.pop(key, None)
    if rank:
        env.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="2")
    done = subprocess.run([sys.executable, "-c", IN_PROCESS, str(steps)], capture_output=True, text=True, env=env,
                          timeout=1800)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    return {k: float(v) for k, v in re.findall(r"(\w)=([\d.]+)", done.stdout)}


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
    parser.add_argument("--in-process", action="store_true",
                        help="instead: the same step traced in one process (no ranks, then as rank 0 of 2), "
                             "interleaved with plain copies")
    args = parser.parse_args()
    if args.in_process:
        print("one process, one thread, the DDP bench's model and step without DDP, copies interleaved step by step")
        for rank in (False, True):
            t = in_process(args.steps, rank)
            print(f"{'as rank 0 of 2 (fingerprints)' if rank else 'single process':32} plain {t['a']:8.0f} us  "
                  f"traced {t['b']:8.0f} us ({t['b'] / t['a']:.3f})  plain again {t['c']:8.0f} us "
                  f"({t['c'] / t['a']:.3f}, A/A)")
        return
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
    print(f"\n2 ranks, gloo, CPU, one thread each, {args.steps} steps; per round, each rank's median step; "
          f"ratios paired within a round (against the mean of its two plain launches), median over {args.rounds} "
          "rounds")
    print(f"{'':22}{'rank 0 (us)':>12}{'rank 1 (us)':>12}{'ratio r0':>10}{'ratio r1':>10}")
    for name, label in (("plain A", "plain"), ("plain B", "plain again (A/A)"), ("recorded", "modscope record")):
        med = {r: statistics.median(run[r] for run in rows[name]) for r in (0, 1)}
        if name == "plain A":
            ratio = {0: 1.0, 1: 1.0}
        elif name == "plain B":  # A/A: the second plain launch against the first
            ratio = {r: statistics.median(b[r] / a[r] for a, b in zip(rows["plain A"], rows["plain B"], strict=True))
                     for r in (0, 1)}
        else:
            ratio = {r: statistics.median(c[r] / ((a[r] + b[r]) / 2) for a, b, c in
                                          zip(rows["plain A"], rows["plain B"], rows["recorded"], strict=True))
                     for r in (0, 1)}
        print(f"{label:22}{med[0]:12.0f}{med[1]:12.0f}{ratio[0]:10.3f}{ratio[1]:10.3f}")

if __name__ == "__main__":
    main()
