"""modscope/examples/_train.py: the shared flags, the digit loaders and the training loop."""

from __future__ import annotations

import _train
import numpy as np
import pytest

import engine
import engine.nn as nn
import engine.nn.functional as F


def parse(argv):
    return _train.parse_example_args(_train.example_parser("test", epochs=2, lr=0.1), argv)


def test_defaults():
    args = parse([])
    assert (args.epochs, args.lr, args.batch_size, args.train_size, args.test_size, args.seed, args.backend) == (
        2, 0.1, 64, 4000, 1000, 1, "engine")


@pytest.mark.parametrize(("argv", "message"), [
    (["--epochs", "0"], "argument --epochs: expected a positive integer, got 0"),
    (["--batch-size", "-3"], "argument --batch-size: expected a positive integer, got -3"),
    (["--lr", "0"], "argument --lr: expected a positive number, got 0"),
    (["--lr", "nan"], "argument --lr: expected a positive number, got nan"),
    (["--epochs", "two"], "argument --epochs: invalid positive_int value: 'two'"),
    (["--backend", "jax"], "argument --backend: invalid choice: 'jax'"),
    (["--train-size", "4001"], "--train-size: at most 4000 training digits are bundled, got 4001"),
    (["--test-size", "1001"], "--test-size: at most 1000 test digits are bundled, got 1001"),
])
def test_bad_flags_exit_with_usage(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_digit_arrays_normalised_and_reshaped():
    xtr, ytr, xte, yte = _train.digit_arrays(300, 100, shape=(28, 28))
    assert xtr.shape == (300, 28, 28) and xte.shape == (100, 28, 28)
    assert xtr.dtype == np.float32 and ytr.dtype == np.int64
    full = _train.digit_arrays()
    assert full[0].shape == (4000, 1, 28, 28) and full[2].shape == (1000, 1, 28, 28)
    # the MNIST normalisation: background pixels map to -mean/std
    assert np.isclose(full[0].min(), -_train.MNIST_MEAN / _train.MNIST_STD)
    assert abs(full[0].mean()) < 0.2 and 0.8 < full[0].std() < 1.2
    np.testing.assert_array_equal(full[0][:300, 0], xtr)  # a smaller size is a prefix of the same split


def test_digit_loaders_batches():
    engine.manual_seed(0)
    train, test = _train.digit_loaders(engine, batch_size=32, train_size=100, test_size=50)
    sizes = [len(y) for _, y in train]
    assert sizes == [32, 32, 32, 4]
    x, y = next(iter(test))
    assert tuple(x.shape) == (50, 1, 28, 28) and x.dtype == engine.float32 and y.dtype == engine.int64
    # a new order every epoch
    first = [y.tolist() for _, y in train]
    second = [y.tolist() for _, y in train]
    assert first != second and sorted(sum(first, [])) == sorted(sum(second, []))


class TinyMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)

    def forward(self, x):
        return self.fc(x.flatten(1))


def test_fit_learns_and_reports(capsys):
    engine.manual_seed(0)
    loaders = _train.digit_loaders(engine, batch_size=50, train_size=500, test_size=200)
    model = TinyMLP()
    optimizer = engine.optim.SGD(model.parameters(), lr=0.05)
    scheduler = engine.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    history = _train.fit(engine, model, optimizer, loaders, 2, F.cross_entropy, scheduler)
    assert [h.epoch for h in history] == [1, 2]
    assert [h.lr for h in history] == [0.05, 0.025]
    assert history[1].train_loss < history[0].train_loss
    assert history[1].accuracy > 0.7
    assert not model.training  # evaluation ran last
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("[engine] epoch 1/2: lr 0.05  train loss ")
    assert lines[1].startswith("[engine] epoch 2/2: lr 0.025  train loss ")


def test_evaluate_averages_over_samples():
    """Batches of unequal size: the mean loss weights each sample equally."""
    model = TinyMLP()
    x = engine.randn(7, 1, 28, 28)
    y = engine.randint(0, 10, (7,))
    loader = engine.utils.data.DataLoader(engine.utils.data.TensorDataset(x, y), batch_size=4)
    loss, accuracy = _train.evaluate(engine, model, loader, F.cross_entropy)
    with engine.no_grad():
        out = model(x)
    assert loss == pytest.approx(F.cross_entropy(out, y).item(), rel=1e-5)
    assert accuracy == pytest.approx((out.argmax(1) == y).float().mean().item())


def test_train_epoch_returns_every_batch_loss_and_trains():
    model = TinyMLP()
    model.eval()
    x, y = engine.randn(10, 1, 28, 28), engine.randint(0, 10, (10,))
    loader = engine.utils.data.DataLoader(engine.utils.data.TensorDataset(x, y), batch_size=3)
    before = model.fc.weight.detach().clone()
    losses = _train.train_epoch(model, loader, engine.optim.SGD(model.parameters(), lr=0.1), F.cross_entropy)
    assert len(losses) == 4 and all(isinstance(v, float) for v in losses)
    assert model.training
    assert not engine.equal(before, model.fc.weight.detach())
