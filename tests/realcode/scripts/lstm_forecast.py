# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""Time-series forecasting as tutorials write it: an IterableDataset yielding sliding windows of a
noisy multi-sine signal, a stacked batch_first LSTM + Linear head reading the last step, MSELoss,
SGD with OneCycleLR, gradient accumulation over two micro-batches, clip_grad_value_, early
stopping on a validation loss with copy.deepcopy of the best state_dict, and an autoregressive
rollout under torch.inference_mode()."""

import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, IterableDataset

DROPOUT = 0.2
WINDOW = 12


class Windows(IterableDataset):
    def __init__(self, series, window):
        super().__init__()
        self.series = series
        self.window = window

    def __iter__(self):
        for start in range(0, len(self.series) - self.window - 1, 3):
            chunk = self.series[start:start + self.window + 1]
            yield torch.from_numpy(chunk[:-1]).unsqueeze(-1), torch.tensor([chunk[-1]])


class Forecaster(nn.Module):
    def __init__(self, hidden=24, layers=2):
        super(Forecaster, self).__init__()
        self.lstm = nn.LSTM(input_size=1, hidden_size=hidden, num_layers=layers, batch_first=True,
                            dropout=DROPOUT)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x, state=None):
        out, state = self.lstm(x, state)
        return self.head(out[:, -1, :]), state


def get_data():
    rng = np.random.default_rng(14)
    t = np.arange(300, dtype=np.float32)
    series = np.sin(t * 0.21) + 0.5 * np.sin(t * 0.05 + 1.0) + 0.05 * rng.standard_normal(300)
    return {"train": series[:240].astype(np.float32), "val": series[240:].astype(np.float32)}


def build():
    return Forecaster()


def evaluate(model, loader, criterion):
    model.eval()
    total, n = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            pred, _ = model(x)
            total += criterion(pred, y).item() * len(x)
            n += len(x)
    return total / n


def train(model, data, steps):
    train_loader = DataLoader(Windows(data["train"], WINDOW), batch_size=8)
    val_loader = DataLoader(Windows(data["val"], WINDOW), batch_size=16)
    criterion = nn.MSELoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.2, total_steps=steps + 1)
    accumulation = 2
    best_loss, best_state, bad_epochs = float("inf"), None, 0
    losses = []
    while len(losses) < steps:
        model.train()
        optimizer.zero_grad()
        for i, (x, y) in enumerate(train_loader):
            pred, _ = model(x)
            loss = criterion(pred, y) / accumulation
            loss.backward()
            if (i + 1) % accumulation == 0:
                nn.utils.clip_grad_value_(model.parameters(), clip_value=0.5)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                losses.append(loss.item() * accumulation)
                if len(losses) == steps:
                    break
        val_loss = evaluate(model, val_loader, criterion)
        if val_loss < best_loss:
            best_loss, best_state, bad_epochs = val_loss, copy.deepcopy(model.state_dict()), 0
        else:
            bad_epochs += 1
            if bad_epochs >= 3:
                break
    model.load_state_dict(best_state)
    model.eval()
    with torch.inference_mode():
        window = torch.from_numpy(data["val"][:WINDOW]).view(1, WINDOW, 1)
        preds = []
        for _ in range(5):
            pred, _ = model(window)
            preds.append(pred.item())
            window = torch.cat([window[:, 1:], pred.view(1, 1, 1)], dim=1)
    assert len(preds) == 5 and all(abs(p) < 10 for p in preds)
    losses.append(best_loss)
    return losses
