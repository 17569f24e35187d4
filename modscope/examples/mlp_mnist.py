"""A 784-256-10 MLP on the bundled MNIST digits, written with engine tensor ops only:
parameters are plain tensors, the update is SGD written by hand. Run it as
``python modscope/examples/mlp_mnist.py [--epochs N]``; it prints loss and accuracy per epoch."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _mnist import load_mnist  # noqa: E402

import engine  # noqa: E402


def cross_entropy(logits: engine.Tensor, target: engine.Tensor) -> engine.Tensor:
    """Mean negative log-likelihood of the target classes."""
    logp = logits.log_softmax(1)
    return -logp.gather(1, target.unsqueeze(1)).mean()


def init_params(seed: int = 0) -> list[engine.Tensor]:
    engine.manual_seed(seed)
    w1 = (engine.randn(784, 256) * (2 / 784) ** 0.5).requires_grad_()
    b1 = engine.zeros(256, requires_grad=True)
    w2 = (engine.randn(256, 10) * (1 / 256) ** 0.5).requires_grad_()
    b2 = engine.zeros(10, requires_grad=True)
    return [w1, b1, w2, b2]


def forward(params: list[engine.Tensor], x: engine.Tensor) -> engine.Tensor:
    w1, b1, w2, b2 = params
    return (x @ w1 + b1).relu() @ w2 + b2


def train_step(params: list[engine.Tensor], x: engine.Tensor, y: engine.Tensor, lr: float) -> float:
    loss = cross_entropy(forward(params, x), y)
    for p in params:
        p.grad = None
    loss.backward()
    with engine.no_grad():
        for p in params:
            p -= lr * p.grad
    return loss.item()


def accuracy(params: list[engine.Tensor], x: engine.Tensor, y: engine.Tensor) -> float:
    with engine.no_grad():
        return (forward(params, x).argmax(1) == y).float().mean().item()


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--lr", type=float, default=0.1)
    args = parser.parse_args(argv)

    xtr, ytr, xte, yte = load_mnist()
    xtr, xte = engine.from_numpy(xtr.reshape(len(xtr), -1)), engine.from_numpy(xte.reshape(len(xte), -1))
    ytr, yte = engine.from_numpy(ytr), engine.from_numpy(yte)
    params = init_params()
    for epoch in range(1, args.epochs + 1):
        start, losses = time.perf_counter(), []
        order = engine.randperm(len(xtr))
        for i in range(0, len(xtr), args.batch_size):
            idx = order[i:i + args.batch_size]
            losses.append(train_step(params, xtr[idx], ytr[idx], args.lr))
        print(f"epoch {epoch}: loss {sum(losses) / len(losses):.4f}  test accuracy "
              f"{accuracy(params, xte, yte):.2%}  ({time.perf_counter() - start:.1f}s)", flush=True)
    return accuracy(params, xte, yte)


if __name__ == "__main__":
    main()
