"""Trains the MNIST Net for a fixed number of steps and prints ``STEPS_PER_S <n>``: run headless
and under the TUI by bench_tui.py to compare throughput."""

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "modscope" / "examples"))

import numpy as np  # noqa: E402
from mnist_net import Net  # noqa: E402

import engine  # noqa: E402
import engine.nn.functional as F  # noqa: E402

steps = int(sys.argv[1])
rng = np.random.default_rng(0)
x = engine.from_numpy(rng.random((64, 1, 28, 28), dtype=np.float32))
y = engine.from_numpy(rng.integers(0, 10, 64))
engine.manual_seed(0)
model = Net()
opt = engine.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
for i in range(steps + 5):
    if i == 5:
        start = time.perf_counter()  # after warm-up
    opt.zero_grad()
    F.nll_loss(model(x), y).backward()
    opt.step()
print(f"STEPS_PER_S {steps / (time.perf_counter() - start):.2f}", flush=True)
