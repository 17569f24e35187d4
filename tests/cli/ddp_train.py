"""A DDP training script on CPU (gloo), started by the tests under torchrun and under
``modscope record --nproc-per-node``. ``--diverge-rank R --diverge-step S``: rank R nudges a
parameter after its optimizer step S (a rank-local update, the classic data-parallel bug).
``--kill-rank R --kill-step S``: rank R SIGKILLs itself at the start of step S. ``--pause``
seconds between steps (so the trace writer, which flushes every 25 ms, has every finished step
on disk before a kill)."""
import argparse
import os
import signal
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--diverge-rank", type=int, default=-1)
p.add_argument("--diverge-step", type=int, default=-1)
p.add_argument("--kill-rank", type=int, default=-1)
p.add_argument("--kill-step", type=int, default=-1)
p.add_argument("--pause", type=float, default=0.0)
a = p.parse_args()
dist.init_process_group("gloo")
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for step in range(a.steps):
    time.sleep(a.pause)
    if rank == a.kill_rank and step == a.kill_step:
        os.kill(os.getpid(), signal.SIGKILL)
    x = torch.randn(4, 8, generator=g)
    loss = ddp(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == a.diverge_rank and step == a.diverge_step:
        with torch.no_grad():
            model[2].bias.add_(1e-6)  # the classic bug: an update on one rank only
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
