# ruff: noqa: UP008, B007 - written the way torch code is written (super(Net, self), unused batch_idx)
"""torchvision's VGG, shrunk: cfgs + make_layers(batch_norm) building Conv2d/BatchNorm2d/ReLU/
MaxPool2d from a list, AdaptiveAvgPool2d((2, 2)), a classifier of Linear/ReLU/Dropout, torchvision's
init (kaiming fan_out for convs, normal(0, 0.01) for Linear), SGD with a StepLR, and a
CrossEntropyLoss training loop reading images from a DataLoader with shuffle."""

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

DROPOUT = 0.5

cfgs = {"tiny": [8, "M", 16, "M", 32, 32, "M"]}


class VGG(nn.Module):
    def __init__(self, features, num_classes=4, init_weights=True, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((2, 2))
        self.classifier = nn.Sequential(
            nn.Linear(32 * 2 * 2, 64),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(64, 64),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(64, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def make_layers(cfg, batch_norm=False):
    layers = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            if batch_norm:
                layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
            else:
                layers += [conv2d, nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


def get_data():
    rng = np.random.default_rng(12)
    y = rng.integers(0, 4, 40)
    x = rng.standard_normal((40, 3, 16, 16)).astype(np.float32)
    x[np.arange(40), :, (y * 4) % 16, :] += 2.0
    return {"x": x, "y": y}


def build():
    return VGG(make_layers(cfgs["tiny"], batch_norm=True), dropout=DROPOUT)


def train(model, data, steps):
    loader = DataLoader(TensorDataset(torch.from_numpy(data["x"]), torch.from_numpy(data["y"])),
                        batch_size=10, shuffle=True, drop_last=True)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.02, momentum=0.9, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    losses = []
    while len(losses) < steps:
        model.train()
        for images, target in loader:
            output = model(images)
            loss = criterion(output, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
            if len(losses) == steps:
                break
        scheduler.step()
    return losses
