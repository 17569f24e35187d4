"""MAML on sine regression (Finn et al.; the learn2learn / higher tutorials written with torch.func):
the inner loop adapts a copy of the weights with torch.autograd.grad(create_graph=True) and runs the
model on them with torch.func.functional_call, the outer loss is the query loss after adaptation,
backpropagated through the inner steps (second order) into Adam on the meta-parameters. A
first-order variant is evaluated at the end. Each "step" is one meta-batch; its meta-loss is returned."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.func import functional_call

INNER_LR, INNER_STEPS, TASKS, SHOTS = 0.02, 2, 4, 10


class SineNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(1, 40), nn.ReLU(), nn.Linear(40, 40), nn.ReLU(),
                                 nn.Linear(40, 1))

    def forward(self, x):
        return self.net(x)


def get_data():
    rng = np.random.default_rng(5)
    n = 64
    amp = rng.uniform(0.1, 5.0, (n, 1, 1))
    phase = rng.uniform(0, np.pi, (n, 1, 1))
    x = rng.uniform(-5, 5, (n, 2 * SHOTS, 1))
    return {"x": x.astype(np.float32), "y": (amp * np.sin(x + phase)).astype(np.float32)}


def build():
    return SineNet()


def adapt(model, params, x, y, create_graph):
    for _ in range(INNER_STEPS):
        loss = F.mse_loss(functional_call(model, params, (x,)), y)
        grads = torch.autograd.grad(loss, list(params.values()), create_graph=create_graph)
        params = {name: p - INNER_LR * g for (name, p), g in zip(params.items(), grads)}
    return params


def meta_loss(model, xs, ys, create_graph=True):
    total = 0.0
    for x, y in zip(xs, ys):
        params = dict(model.named_parameters())
        fast = adapt(model, params, x[:SHOTS], y[:SHOTS], create_graph)
        total = total + F.mse_loss(functional_call(model, fast, (x[SHOTS:],)), y[SHOTS:])
    return total / len(xs)


def train(model, data, steps):
    xs, ys = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    meta_opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for step in range(steps):
        i = (step * TASKS) % 48
        loss = meta_loss(model, xs[i:i + TASKS], ys[i:i + TASKS])
        meta_opt.zero_grad()
        loss.backward()
        meta_opt.step()
        losses.append(loss.item())
    # first-order MAML on held-out tasks: no graph through the inner loop, the weights untouched
    before = [p.detach().clone() for p in model.parameters()]
    held_out = meta_loss(model, xs[48:56], ys[48:56], create_graph=False)
    assert held_out.requires_grad and all(torch.equal(a, p) for a, p in zip(before, model.parameters()))
    losses.append(held_out.item())
    return losses
