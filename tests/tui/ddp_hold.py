"""A DDP training script on CPU (gloo) for holding every rank paused (``modscope run
--nproc-per-node 2``): ``--timeout`` seconds for gloo's collectives (``init_process_group(timeout=)``),
``--steps`` steps of ``--sleep`` seconds each, so a viewer has time to pause it."""
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
a = p.parse_args()
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=a.timeout))
rank = dist.get_rank()
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
g = torch.Generator().manual_seed(rank)
for _ in range(a.steps):
    time.sleep(a.sleep)
    loss = ddp(torch.randn(4, 8, generator=g)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
