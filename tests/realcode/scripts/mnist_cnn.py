# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""The Net of pytorch/examples' mnist/main.py: two convs, max pool, Dropout, log_softmax + nll_loss,
Adadelta with StepLR, a train loop over a DataLoader and a no_grad test pass with argmax accuracy."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

DROPOUT = 0.25


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(DROPOUT)
        self.dropout2 = nn.Dropout(DROPOUT * 2)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output


def get_data():
    rng = np.random.default_rng(0)
    images = rng.random((48, 1, 28, 28), dtype=np.float32)
    labels = rng.integers(0, 10, 48)
    images[np.arange(48), 0, labels * 2 + 3, 4:24] += 1.0  # a learnable stripe per class
    return {"x": (images - 0.1307) / 0.3081, "y": labels}


def build():
    return Net()


def test(model, loader):
    model.eval()
    test_loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
    return test_loss / len(loader.dataset), correct


def train(model, data, steps):
    dataset = TensorDataset(torch.from_numpy(data["x"]), torch.from_numpy(data["y"]))
    train_loader = DataLoader(dataset, batch_size=8, shuffle=True)
    optimizer = optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = StepLR(optimizer, step_size=1, gamma=0.7)
    losses = []
    while len(losses) < steps:
        model.train()
        for batch_idx, (x, target) in enumerate(train_loader):
            optimizer.zero_grad()
            output = model(x)
            loss = F.nll_loss(output, target)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        scheduler.step()
    test_loss, correct = test(model, DataLoader(dataset, batch_size=16))
    losses.append(test_loss)
    return losses
