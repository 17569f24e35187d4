# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""Checkpoint and resume as training scripts do it: a dict of model, optimizer and scheduler
state_dicts plus the epoch saved with torch.save, loaded with torch.load(weights_only=True) into a
freshly built model/optimizer/scheduler, and training continued. The resumed run must give the same
losses as an uninterrupted one (the test checks it), and the same as torch."""

import io
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import ExponentialLR

DROPOUT = 0.0  # no dropout: the uninterrupted and resumed runs must be comparable


class Classifier(nn.Module):
    def __init__(self, n_in=12, n_hidden=24, n_classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_in, n_hidden), nn.BatchNorm1d(n_hidden), nn.ReLU(),
            nn.Dropout(DROPOUT), nn.Linear(n_hidden, n_classes),
        )

    def forward(self, x):
        return self.net(x)


def get_data():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 12)).astype(np.float32)
    return {"x": x, "y": (x[:, :4] * np.arange(1, 5)).argmax(1)}


def build():
    return Classifier()


def make_optimizer(model):
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=1e-4, amsgrad=True)
    return optimizer, ExponentialLR(optimizer, gamma=0.9)


def train_epochs(model, optimizer, scheduler, data, start, stop):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    losses = []
    for epoch in range(start, stop):
        model.train()
        for lo in range(0, 64, 16):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x[lo:lo + 16]), y[lo:lo + 16])
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    return losses


def save_checkpoint(path, model, optimizer, scheduler, epoch):
    torch.save({
        "epoch": epoch,
        "model_state_dict": model.state_dict(),
        "optimizer_state_dict": optimizer.state_dict(),
        "scheduler_state_dict": scheduler.state_dict(),
    }, path)


def train(model, data, steps, resume_at=None):
    """`steps` epochs of 4 batches each, checkpointed and resumed at epoch `resume_at` (half way
    by default); a negative `resume_at` trains straight through."""
    resume_at = steps // 2 if resume_at is None else resume_at
    optimizer, scheduler = make_optimizer(model)
    if resume_at < 0:
        return train_epochs(model, optimizer, scheduler, data, 0, steps)
    losses = train_epochs(model, optimizer, scheduler, data, 0, resume_at)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "checkpoint.pt")
        save_checkpoint(path, model, optimizer, scheduler, resume_at)
        del model, optimizer, scheduler
        model = build()  # fresh weights, overwritten below
        optimizer, scheduler = make_optimizer(model)
        checkpoint = torch.load(path, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    scheduler.load_state_dict(checkpoint["scheduler_state_dict"])
    start = checkpoint["epoch"]
    losses += train_epochs(model, optimizer, scheduler, data, start, steps)
    # the final weights round-trip through an in-memory buffer too
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    reloaded = build()
    reloaded.load_state_dict(torch.load(buffer))
    model.eval()
    reloaded.eval()
    x = torch.from_numpy(data["x"])
    with torch.no_grad():
        assert torch.equal(model(x), reloaded(x))
    return losses
