"""A 784-256-10 multilayer perceptron as an ``nn.Module`` (``Flatten``, two ``Linear`` layers and a
``ReLU`` in an ``nn.Sequential``), trained with plain SGD on cross-entropy: the same network that
``mlp_mnist.py`` writes with bare tensors and a hand-written update, here as torch users write it.

    python modscope/examples/mlp.py [--epochs N] [--backend torch|both]
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
import engine.optim as optim  # noqa: E402


class MLP(nn.Module):
    def __init__(self, hidden: int = 256):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Flatten(),
            nn.Linear(28 * 28, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 10),
        )

    def forward(self, x):
        return self.layers(x)


def main(argv: Sequence[str] | None = None) -> float:
    """Train and return the final test accuracy."""
    parser = example_parser(__doc__, epochs=5, lr=0.1, batch_size=128)
    parser.add_argument("--hidden", type=int, default=256, help="hidden units (default 256)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    net = MLP(args.hidden)
    optimizer = optim.SGD(net.parameters(), lr=args.lr)
    history = fit(torch, net, optimizer, loaders, args.epochs, nn.CrossEntropyLoss())
    return history[-1].accuracy


if __name__ == "__main__":
    main()
