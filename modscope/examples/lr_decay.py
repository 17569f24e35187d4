"""A learning rate that falls with the epoch: ``optim.lr_scheduler.StepLR`` multiplies it by
``--gamma`` every ``--step-size`` epochs (the PyTorch MNIST example's schedule); each epoch's line
shows the rate it trained with. ``--scheduler exponential`` or ``cosine`` pick ExponentialLR or
CosineAnnealingLR instead.

    python modscope/examples/lr_decay.py [--epochs N] [--gamma G] [--scheduler step|exponential|cosine]
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _backend  # noqa: E402
from _train import digit_loaders, example_parser, fit, parse_example_args, positive_float, positive_int  # noqa: E402

import engine as torch  # noqa: E402
import engine.nn as nn  # noqa: E402
import engine.nn.functional as F  # noqa: E402
import engine.optim as optim  # noqa: E402
from engine.optim.lr_scheduler import CosineAnnealingLR, ExponentialLR, StepLR  # noqa: E402


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(28 * 28, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(self.flatten(x))))


def make_scheduler(optimizer: optim.Optimizer, name: str, epochs: int, step_size: int,
                   gamma: float) -> optim.lr_scheduler.LRScheduler:
    """The scheduler ``name`` for ``optimizer``; stepped once per epoch."""
    if name == "step":
        return StepLR(optimizer, step_size=step_size, gamma=gamma)
    if name == "exponential":
        return ExponentialLR(optimizer, gamma=gamma)
    return CosineAnnealingLR(optimizer, T_max=epochs)


def main(argv: Sequence[str] | None = None) -> float:
    """Train with a decaying learning rate, return the final test accuracy."""
    parser = example_parser(__doc__, epochs=4, lr=0.2)
    parser.add_argument("--scheduler", choices=("step", "exponential", "cosine"), default="step")
    parser.add_argument("--step-size", type=positive_int, default=1, help="StepLR: epochs per decay (default 1)")
    parser.add_argument("--gamma", type=positive_float, default=0.7,
                        help="StepLR/ExponentialLR: factor per decay (default 0.7)")
    args = parse_example_args(parser, argv)
    if args.backend != torch.__name__:
        return _backend.run(__file__, args.backend, argv, "{:.2%}".format)

    torch.manual_seed(args.seed)
    loaders = digit_loaders(torch, args.batch_size, args.train_size, args.test_size)
    model = MLP()
    optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=0.5)
    scheduler = make_scheduler(optimizer, args.scheduler, args.epochs, args.step_size, args.gamma)
    history = fit(torch, model, optimizer, loaders, args.epochs, F.cross_entropy, scheduler)
    return history[-1].accuracy


if __name__ == "__main__":
    main()
