"""A tiny ResNet: a 3x3 stem and three residual stages of one BasicBlock each (8, 16, 32 channels;
the last two halve the resolution, with a 1x1 convolution on the shortcut), batch norm after every
convolution, global average pooling and a linear classifier. The block is the classic
CIFAR ResNet's; widths are cut down so it trains on the digits in seconds.

    python modscope/examples/resnet_tiny.py [--epochs N] [--train-size N] [--backend torch|both]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _backend  # noqa: E402
from _train import digit_loaders, example_parser, fit, parse_example_args  # noqa: E402

import engine as torch  # noqa: E402
import engine.nn as nn  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import engine.optim as optim  # noqa: E402


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_planes, planes, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)

        self.shortcut = nn.Sequential()
        if stride != 1 or in_planes != self.expansion * planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, self.expansion * planes, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(self.expansion * planes),
            )

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += self.shortcut(x)
        out = F.relu(out)
        return out


class ResNetTiny(nn.Module):
    def __init__(self, block=BasicBlock, num_blocks=(1, 1, 1), num_classes=10, in_channels=1):
        super().__init__()
        self.in_planes = 8
        self.conv1 = nn.Conv2d(in_channels, 8, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.layer1 = self._make_layer(block, 8, num_blocks[0], stride=1)
        self.layer2 = self._make_layer(block, 16, num_blocks[1], stride=2)
        self.layer3 = self._make_layer(block, 32, num_blocks[2], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.linear = nn.Linear(32 * block.expansion, num_classes)

    def _make_layer(self, block, planes, num_blocks, stride):
        strides = [stride] + [1] * (num_blocks - 1)
        layers = []
        for stride in strides:
            layers.append(block(self.in_planes, planes, stride))
            self.in_planes = planes * block.expansion
        return nn.Sequential(*layers)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.layer1(out)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.avgpool(out)
        out = torch.flatten(out, 1)
        out = self.linear(out)
        return out


def main(argv: Sequence[str] | None = None) -> float:
    """Train on a subset of the digits, return the final test accuracy."""
    parser = example_parser(__doc__, epochs=4, lr=0.003, batch_size=32, train_size=2000, test_size=500)
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    model = ResNetTiny()
    optimizer = optim.Adam(model.parameters(), lr=args.lr)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
