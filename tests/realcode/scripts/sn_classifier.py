"""A small image classifier regularised the way GAN discriminators and robust classifiers are:
nn.utils.parametrizations.spectral_norm on the convolutions (power iteration buffers _u/_v),
parametrizations.weight_norm on the head (original0/original1), CrossEntropyLoss(label_smoothing=0.1),
SGD with OneCycleLR (cos annealing, momentum cycling), a per-step lr record, and at the end the
spectral norm of each conv weight checked (largest singular value ~ 1) in eval mode."""

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils import parametrizations, parametrize

DROPOUT = 0.2


class SNNet(nn.Module):
    def __init__(self, n_classes=4):
        super().__init__()
        sn = parametrizations.spectral_norm
        self.features = nn.Sequential(
            sn(nn.Conv2d(1, 8, 3, padding=1)), nn.LeakyReLU(0.1), nn.MaxPool2d(2),
            sn(nn.Conv2d(8, 16, 3, padding=1)), nn.LeakyReLU(0.1), nn.AdaptiveAvgPool2d(2),
            nn.Flatten(), nn.Dropout(DROPOUT))
        self.head = parametrizations.weight_norm(nn.Linear(64, n_classes), dim=0)

    def forward(self, x):
        return self.head(self.features(x))


def get_data():
    rng = np.random.default_rng(17)
    y = rng.integers(0, 4, 64)
    x = 0.5 * rng.standard_normal((64, 1, 12, 12))
    for k in range(4):  # class k: a bright quadrant
        r, c = divmod(k, 2)
        x[y == k, :, 6 * r:6 * r + 6, 6 * c:6 * c + 6] += 1.0
    return {"x": x.astype(np.float32), "y": y.astype(np.int64)}


def build():
    return SNNet()


def train(model, data, steps):
    x, y = torch.from_numpy(data["x"]), torch.from_numpy(data["y"])
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.2, total_steps=steps + 1,
                                                    pct_start=0.3)
    losses, lrs = [], []
    model.train()
    for step in range(steps):
        i = (step * 16) % 64
        loss = criterion(model(x[i:i + 16]), y[i:i + 16])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        lrs.append(scheduler.get_last_lr()[0])
        scheduler.step()
        losses.append(loss.item())
    assert max(lrs) <= 0.2 + 1e-9 and lrs[0] < max(lrs)
    model.eval()
    with torch.no_grad():
        for conv in (model.features[0], model.features[3]):
            assert parametrize.is_parametrized(conv, "weight")
            sigma = torch.linalg.matrix_norm(conv.weight.flatten(1), ord=2)
            assert abs(sigma.item() - 1.0) < 0.2, sigma
        losses.append(criterion(model(x), y).item())
    return losses
