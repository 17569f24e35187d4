"""The classic PyTorch MNIST example's ``Net`` (two convolutions with max pooling, channel dropout,
two fully connected layers, log-softmax), trained with SGD and momentum on 4,000 bundled digits and
tested on the other 1,000.

    python modscope/examples/mnist_net.py                    # the engine, 15 epochs
    python modscope/examples/mnist_net.py --backend torch    # the same file under real PyTorch
    python modscope/examples/mnist_net.py --backend both     # both, then the two accuracies side by side
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


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)

    def forward(self, x):
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def main(argv: Sequence[str] | None = None) -> float:
    """Train and return the final test accuracy (the engine's, with ``--backend both``)."""
    parser = example_parser(__doc__, epochs=15, lr=0.01)
    parser.add_argument("--momentum", type=float, default=0.5, help="SGD momentum (default 0.5)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.nll_loss)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
