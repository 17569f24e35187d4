"""A DDP training script on CPU (gloo) for holding every rank paused (``modscope run
--nproc-per-node 2``): ``--timeout`` seconds for gloo's collectives (``init_process_group(timeout=)``),
``--steps`` steps of ``--sleep`` seconds each, so a viewer has time to pause it; ``--diverge-step S``:
rank 1 nudges a parameter after its optimizer step S (a rank-local update)."""
import argparse
import datetime
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--sleep", type=float, default=0.1)
p.add_argument("--timeout", type=float, default=1800.0)
p.add_argument("--diverge-step", type=int, default=-1)
a = p.parse_args()
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for step in range(a.steps):
    time.sleep(a.sleep)
    loss = ddp(torch.randn(4, 8, generator=g)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 1 and step == a.diverge_step:
        with torch.no_grad():
            model[0].bias.add_(1e-6)
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
