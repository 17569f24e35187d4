"""A tiny training script for the end-to-end test: a real child process runs it under modscope."""

import sys

import engine as torch
import engine.nn as nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 2)
steps = int(sys.argv[1])
for step in range(steps):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 50 == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)
if len(sys.argv) > 2 and sys.argv[2] == "raise":
    raise ValueError("the script failed on purpose")
