"""The training loop the examples share, written the way PyTorch's MNIST example writes it.

Nothing here imports the engine: functions receive the library (``torch`` in an example, which is
``engine`` or real torch, see ``_backend.py``) or objects it made, so the same loop serves both.

- ``example_parser``  the flags every example takes (epochs, lr, sizes, seed, backend)
- ``digit_loaders``   DataLoaders over the bundled MNIST digits
- ``train_epoch`` / ``evaluate`` / ``fit``   the loop itself; ``fit`` prints one line per epoch
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from _mnist import load_mnist

try:
    from modscope import log as log_metrics
except ImportError:  # the examples also run where modscope is not installed

    def log_metrics(**metrics: float) -> None:
        pass

N_TRAIN, N_TEST = 4000, 1000
# The MNIST example's Normalize((0.1307,), (0.3081,)): the mean and std of MNIST's training pixels.
MNIST_MEAN, MNIST_STD = 0.1307, 0.3081


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a float > 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return value


def example_parser(description: str | None, *, epochs: int, lr: float, batch_size: int = 64,
                   train_size: int = N_TRAIN, test_size: int = N_TEST) -> argparse.ArgumentParser:
    """A parser with the flags every example takes; the example adds its own and calls
    ``parse_example_args``."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=positive_int, default=epochs, help=f"default {epochs}")
    parser.add_argument("--lr", type=positive_float, default=lr, help=f"learning rate, default {lr}")
    parser.add_argument("--batch-size", type=positive_int, default=batch_size, help=f"default {batch_size}")
    parser.add_argument("--train-size", type=positive_int, default=train_size,
                        help=f"training digits used, at most {N_TRAIN} (default {train_size})")
    parser.add_argument("--test-size", type=positive_int, default=test_size,
                        help=f"test digits used, at most {N_TEST} (default {test_size})")
    parser.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    parser.add_argument("--backend", choices=("engine", "torch", "both"), default="engine",
                        help="run under the engine, real PyTorch, or both side by side (default engine)")
    return parser


def parse_example_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` plus the checks argparse cannot express (exits with status 2
    and a usage message, as argparse does)."""
    args = parser.parse_args(argv)
    if args.train_size > N_TRAIN:
        parser.error(f"--train-size: at most {N_TRAIN} training digits are bundled, got {args.train_size}")
    if args.test_size > N_TEST:
        parser.error(f"--test-size: at most {N_TEST} test digits are bundled, got {args.test_size}")
    return args


def digit_arrays(train_size: int = N_TRAIN, test_size: int = N_TEST,
                 shape: tuple[int, ...] = (1, 28, 28)) -> tuple[np.ndarray, ...]:
    """``(x_train, y_train, x_test, y_test)`` as NumPy arrays: normalised float32 images reshaped
    per digit to ``shape`` (e.g. ``(28, 28)`` for a sequence of rows) and int64 labels."""
    xtr, ytr, xte, yte = load_mnist(N_TRAIN)
    xtr = (xtr[:train_size] - MNIST_MEAN) / MNIST_STD
    xte = (xte[:test_size] - MNIST_MEAN) / MNIST_STD
    return (xtr.reshape(len(xtr), *shape).astype(np.float32), ytr[:train_size],
            xte.reshape(len(xte), *shape).astype(np.float32), yte[:test_size])


def digit_loaders(torch: Any, batch_size: int, train_size: int = N_TRAIN, test_size: int = N_TEST,
                  shape: tuple[int, ...] = (1, 28, 28), test_batch_size: int = 1000) -> tuple[Any, Any]:
    """``(train_loader, test_loader)`` over the bundled digits; the training loader reshuffles
    every epoch (with ``torch``'s global generator, so ``torch.manual_seed`` fixes the order)."""
    xtr, ytr, xte, yte = digit_arrays(train_size, test_size, shape)
    data = torch.utils.data
    train = data.TensorDataset(torch.from_numpy(xtr), torch.from_numpy(ytr))
    test = data.TensorDataset(torch.from_numpy(xte), torch.from_numpy(yte))
    return (data.DataLoader(train, batch_size=batch_size, shuffle=True),
            data.DataLoader(test, batch_size=test_batch_size))


def train_epoch(model: Any, loader: Any, optimizer: Any, loss_fn: Callable[[Any, Any], Any]) -> list[float]:
    """One pass over ``loader`` in training mode; returns the loss of every batch."""
    model.train()
    losses = []
    for data, target in loader:
        optimizer.zero_grad()
        output = model(data)
        loss = loss_fn(output, target)
        loss.backward()
        losses.append(loss.item())
        log_metrics(loss=losses[-1])  # the TUI's loss sparkline; a no-op outside ``modscope run``
        optimizer.step()
    return losses


def evaluate(torch: Any, model: Any, loader: Any, loss_fn: Callable[[Any, Any], Any]) -> tuple[float, float]:
    """``(mean loss, accuracy)`` over ``loader`` in evaluation mode without recording a graph.
    ``loss_fn`` returns the mean loss of a batch (torch's default reduction)."""
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            total_loss += loss_fn(output, target).item() * len(target)
            correct += (output.argmax(dim=1) == target).sum().item()
            count += len(target)
    return total_loss / count, correct / count


@dataclass(frozen=True)
class EpochStats:
    """What ``fit`` measured in one epoch; ``lr`` is the rate the epoch trained with."""

    epoch: int
    train_loss: float
    test_loss: float
    accuracy: float
    lr: float
    seconds: float


def fit(torch: Any, model: Any, optimizer: Any, loaders: tuple[Any, Any], epochs: int,
        loss_fn: Callable[[Any, Any], Any], scheduler: Any = None) -> list[EpochStats]:
    """Train for ``epochs``, evaluating after each one and printing a line
    ``[backend] epoch k/n: ...``; steps ``scheduler`` (if any) once per epoch. Returns the stats
    of every epoch."""
    train_loader, test_loader = loaders
    history = []
    for epoch in range(1, epochs + 1):
        start = time.perf_counter()
        lr = optimizer.param_groups[0]["lr"]
        losses = train_epoch(model, train_loader, optimizer, loss_fn)
        if scheduler is not None:
            scheduler.step()
        test_loss, accuracy = evaluate(torch, model, test_loader, loss_fn)
        stats = EpochStats(epoch, sum(losses) / len(losses), test_loss, accuracy, lr, time.perf_counter() - start)
        history.append(stats)
        print(f"[{torch.__name__}] epoch {epoch}/{epochs}: lr {lr:.4g}  train loss {stats.train_loss:.4f}  "
              f"test loss {test_loss:.4f}  accuracy {accuracy:.2%}  ({stats.seconds:.1f}s)", flush=True)
    return history
