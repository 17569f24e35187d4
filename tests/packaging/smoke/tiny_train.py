"""A small training loop for the smoke suite: ``python tiny_train.py engine|torch STEPS``."""

import importlib
import sys

torch = importlib.import_module(sys.argv[1])
steps = int(sys.argv[2])
nn = torch.nn

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(32, 8), torch.randint(0, 2, (32,))
for _ in range(steps):
    loss = nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"trained {steps} steps, final loss {loss.item():.4f}")
