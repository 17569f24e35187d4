# ruff: noqa: N802, N806 - d2l names (net, X, y_hat) kept as the book writes them
"""d2l.ai's style of model building with lazy layers: a LeNet/VGG-ish net of nn.LazyConv2d,
nn.LazyBatchNorm2d, nn.LazyLinear (in-shapes inferred), materialised by a dry run on one batch
before the optimizer is made (the book's `net(X)` then `apply(init_cnn)` with xavier_uniform_),
then SGD with momentum and weight decay, StepLR, and an accuracy computed the book's way."""

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F


def init_cnn(module):
    if type(module) is nn.Linear or type(module) is nn.Conv2d:
        nn.init.xavier_uniform_(module.weight)


class LeNetBN(nn.Module):
    def __init__(self, num_classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.LazyConv2d(6, kernel_size=5, padding=2), nn.LazyBatchNorm2d(), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2),
            nn.LazyConv2d(12, kernel_size=3), nn.LazyBatchNorm2d(), nn.Sigmoid(),
            nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
            nn.LazyLinear(48), nn.LazyBatchNorm1d(), nn.Sigmoid(),
            nn.LazyLinear(num_classes))

    def forward(self, X):
        return self.net(X)


def get_data():
    rng = np.random.default_rng(21)
    y = rng.integers(0, 5, 48)
    X = rng.normal(0, 1, (48, 1, 16, 16)).astype(np.float32)
    for c in range(5):  # each class brightens its own horizontal band
        X[y == c, :, 3 * c: 3 * c + 3, :] += 1.5
    return {"X": X, "y": y.astype(np.int64)}


def build():
    net = LeNetBN()
    net(torch.zeros(2, 1, 16, 16))  # the dry run: every lazy layer gets its shapes
    net.apply(init_cnn)
    assert not any(isinstance(p, nn.parameter.UninitializedParameter) for p in net.parameters())
    assert type(net.net[0]) is nn.Conv2d and net.net[9].in_features == 12 * 3 * 3
    return net


def accuracy(y_hat, y):
    preds = y_hat.argmax(axis=1).type(y.dtype)
    return float((preds == y).type(torch.float32).mean())


def train(net, data, steps):
    X, y = torch.tensor(data["X"]), torch.tensor(data["y"])
    optimizer = torch.optim.SGD(net.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
    losses = []
    for step in range(steps):
        net.train()
        i = (step * 16) % 48
        y_hat = net(X[i: i + 16])
        loss = F.cross_entropy(y_hat, y[i: i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
    net.eval()
    with torch.no_grad():
        acc = accuracy(net(X), y)
    assert 0.0 <= acc <= 1.0
    losses.append(F.cross_entropy(net(X), y).item())
    return losses
