"""Initialising weights with ``Module.apply``: a function that looks at each submodule's type and
re-initialises it (He/Kaiming normal for convolutions feeding a ReLU, Xavier uniform for linear
layers, biases set to a constant), applied to a whole network in one call. The example prints
every layer's weight statistics before and after, then trains the network on the digits.

    python modscope/examples/init_weights.py [--init default|custom] [--epochs N] [--backend torch|both]
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


def init_weights(m: nn.Module) -> None:
    """The function given to ``apply``: called once on every submodule, children first."""
    if isinstance(m, nn.Conv2d):
        nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
        nn.init.zeros_(m.bias)
    elif isinstance(m, nn.Linear):
        nn.init.xavier_uniform_(m.weight)
        m.bias.data.fill_(0.01)


class ConvNet(nn.Sequential):
    """Two convolutions with pooling, then a two-layer classifier; a plain ``Sequential``."""

    def __init__(self):
        super().__init__(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 7 * 7, 64), nn.ReLU(),
            nn.Linear(64, 10),
        )


def weight_stats(model: nn.Module) -> dict[str, tuple[float, float]]:
    """``{name: (weight std, bias mean)}`` of every layer that has a weight."""
    with torch.no_grad():
        return {name: (m.weight.std().item(), m.bias.mean().item())
                for name, m in model.named_modules() if isinstance(m, nn.Conv2d | nn.Linear)}


def print_stats(title: str, stats: dict[str, tuple[float, float]]) -> None:
    print(title)
    for name, (std, bias) in stats.items():
        print(f"  layer {name:>2}: weight std {std:.4f}  bias mean {bias:+.4f}")


def main(argv: Sequence[str] | None = None) -> float:
    """Initialise (``--init custom`` applies ``init_weights``), train, return the test accuracy."""
    parser = example_parser(__doc__, epochs=2, lr=0.02)
    parser.add_argument("--init", choices=("default", "custom"), default="custom",
                        help="keep the layers' own initialisation or apply init_weights (default custom)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    model = ConvNet()
    print_stats("the layers' own initialisation:", weight_stats(model))
    if args.init == "custom":
        model.apply(init_weights)
        print_stats("after model.apply(init_weights):", weight_stats(model))
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
