"""The "Deep Learning with PyTorch: A 60 Minute Blitz" network -- two 3x3 convolutions with 2x2 max
pooling, then three fully connected layers (576 -> 120 -> 84 -> 10) -- adapted to the 28x28 MNIST
digits: ``padding=2`` on the first convolution gives the 32x32 input the blitz was written for, so
the flattened feature map is the blitz's 16 * 6 * 6 = 576. Trained with SGD and momentum on
cross-entropy.

    python modscope/examples/simple_net.py [--epochs N] [--backend torch|both]
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


class SimpleNet(nn.Module):
    def __init__(self):
        super().__init__()
        # 1 input image channel, 6 output channels, 3x3 square convolution kernel
        self.conv1 = nn.Conv2d(1, 6, 3, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 3)
        # an affine operation: y = Wx + b
        self.fc1 = nn.Linear(16 * 6 * 6, 120)  # 6*6 from image dimension
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        # Max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # If the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)  # flatten all dimensions except the batch dimension
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


def main(argv: Sequence[str] | None = None) -> float:
    """Train and return the final test accuracy."""
    parser = example_parser(__doc__, epochs=5, lr=0.01)
    parser.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    net = SimpleNet()
    criterion = nn.CrossEntropyLoss()
    optimizer = optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    history = fit(torch, net, optimizer, loaders, args.epochs, criterion)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
