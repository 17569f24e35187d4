"""engine.nn.init: in place, under no_grad, returning the tensor; distributions and gains as torch's."""

from __future__ import annotations

import math

import numpy as np
import pytest

import engine
from engine.nn import init

from .conftest import close, error_of


def leaf(*shape):
    return engine.empty(*shape, requires_grad=True)


@pytest.mark.parametrize("fill", [
    lambda t: init.uniform_(t, -2, 3), lambda t: init.normal_(t, 1, 2), lambda t: init.constant_(t, 0.5),
    init.ones_, init.zeros_, init.xavier_uniform_, init.xavier_normal_, init.kaiming_uniform_,
    init.kaiming_normal_, lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu"),
], ids=["uniform", "normal", "constant", "ones", "zeros", "xavier_uniform", "xavier_normal", "kaiming_uniform",
        "kaiming_normal", "kaiming_fan_out"])
def test_fills_a_leaf_in_place_without_recording(fill):
    t = leaf(30, 40)
    version = t._version_value
    out = fill(t)
    assert out is t
    assert t.grad_fn is None and t.requires_grad and t.dtype == engine.float32
    assert t._version_value == version + 1  # an in-place write, as in torch


def test_constant_values():
    assert init.constant_(engine.empty(2, 2), 0.25).tolist() == [[0.25, 0.25], [0.25, 0.25]]
    assert init.ones_(engine.empty(3)).tolist() == [1.0, 1.0, 1.0]
    assert init.zeros_(engine.ones(3)).tolist() == [0.0, 0.0, 0.0]


def test_distributions():
    engine.manual_seed(0)
    u = init.uniform_(engine.empty(200, 500), -2.0, 3.0).numpy()
    assert u.min() >= -2 and u.max() < 3 and abs(u.mean() - 0.5) < 0.02
    n = init.normal_(engine.empty(200, 500), 1.0, 2.0).numpy()
    assert abs(n.mean() - 1) < 0.02 and abs(n.std() - 2) < 0.02


@pytest.mark.parametrize("shape", [(64, 32), (16, 8, 3, 3), (20, 10, 5)])
def test_xavier_and_kaiming_bounds_and_spreads(shape):
    engine.manual_seed(1)
    fan_in = shape[1] * math.prod(shape[2:])
    fan_out = shape[0] * math.prod(shape[2:])
    xa = math.sqrt(6 / (fan_in + fan_out))
    w = init.xavier_uniform_(engine.empty(*shape)).numpy()
    assert np.abs(w).max() <= xa and np.abs(w).max() > 0.9 * xa
    w = init.xavier_normal_(engine.empty(*shape), gain=2.0).numpy()
    assert abs(w.std() - 2 * math.sqrt(2 / (fan_in + fan_out))) < 0.1 * w.std()
    kb = math.sqrt(3) * math.sqrt(2 / (1 + 0.2**2)) / math.sqrt(fan_in)
    w = init.kaiming_uniform_(engine.empty(*shape), a=0.2).numpy()
    assert np.abs(w).max() <= kb and np.abs(w).max() > 0.9 * kb
    w = init.kaiming_normal_(engine.empty(*shape), mode="fan_out", nonlinearity="relu").numpy()
    assert abs(w.std() - math.sqrt(2 / fan_out)) < 0.1 * w.std()


def test_generator_makes_draws_reproducible():
    a = init.kaiming_uniform_(engine.empty(5, 5), generator=engine.Generator().manual_seed(3))
    b = init.kaiming_uniform_(engine.empty(5, 5), generator=engine.Generator().manual_seed(3))
    assert a.tolist() == b.tolist()


@pytest.mark.parametrize("args", [("linear",), ("conv2d",), ("sigmoid",), ("tanh",), ("relu",), ("leaky_relu",),
                                  ("leaky_relu", 0.2), ("leaky_relu", 1), ("selu",), ("conv_transpose3d",)], ids=str)
def test_calculate_gain_matches_torch(torch, args):
    assert init.calculate_gain(*args) == torch.nn.init.calculate_gain(*args)


@pytest.mark.parametrize("shape", [(3, 4), (5, 3, 2), (6, 4, 3, 3), (2, 1, 1, 1, 7)])
def test_fans_match_torch(torch, shape):
    assert init._calculate_fan_in_and_fan_out(engine.empty(*shape)) == \
        torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    for mode in ("fan_in", "fan_out", "FAN_IN"):
        assert init._calculate_correct_fan(engine.empty(*shape), mode) == \
            torch.nn.init._calculate_correct_fan(torch.empty(*shape), mode)


# trunc_normal_, orthogonal_, sparse_, eye_, dirac_ and the gains, against torch

def test_trunc_normal_statistics(torch):
    e = engine.nn.init.trunc_normal_(engine.empty(200000), mean=0.5, std=2.0, a=-1.0, b=3.0)
    t = torch.nn.init.trunc_normal_(torch.empty(200000), mean=0.5, std=2.0, a=-1.0, b=3.0)
    v, w = e.numpy(), t.numpy()
    assert v.min() >= -1.0 and v.max() <= 3.0
    assert abs(v.mean() - w.mean()) < 0.02 and abs(v.std() - w.std()) < 0.02
    with pytest.warns(UserWarning, match="mean is more than 2 std from"):
        engine.nn.init.trunc_normal_(engine.empty(3), mean=10.0)


@pytest.mark.parametrize("shape", [(6, 4), (3, 8), (4, 2, 3)])
def test_orthogonal(shape):
    w = engine.nn.init.orthogonal_(engine.empty(*shape), gain=2.0)
    m = w.numpy().reshape(shape[0], -1).astype(np.float64)
    gram = m @ m.T if m.shape[0] <= m.shape[1] else m.T @ m
    np.testing.assert_allclose(gram, 4.0 * np.eye(gram.shape[0]), atol=1e-5)


def test_generator_makes_every_fill_reproducible():
    for fn in (lambda t, g: engine.nn.init.trunc_normal_(t, generator=g),
               lambda t, g: engine.nn.init.orthogonal_(t, generator=g),
               lambda t, g: engine.nn.init.sparse_(t, 0.5, generator=g),
               lambda t, g: engine.nn.init.uniform_(t, generator=g),
               lambda t, g: engine.nn.init.normal_(t, generator=g)):
        a = fn(engine.empty(5, 4), engine.Generator().manual_seed(3)).numpy()
        b = fn(engine.empty(5, 4), engine.Generator().manual_seed(3)).numpy()
        c = fn(engine.empty(5, 4), engine.Generator().manual_seed(4)).numpy()
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_sparse_zeroes_rows_per_column():
    w = engine.nn.init.sparse_(engine.empty(10, 6), sparsity=0.25, std=0.5).numpy()
    assert np.all((w == 0).sum(0) == 3)  # ceil(0.25 * 10) per column
    assert 0.2 < w[w != 0].std() < 1.0


def test_eye_dirac_and_gains_equal_torch(torch):
    close(engine.nn.init.eye_(engine.empty(3, 5)), torch.nn.init.eye_(torch.empty(3, 5)))
    for shape, groups in [((4, 2, 3), 1), ((6, 3, 3, 3), 2), ((4, 4, 1, 3, 5), 2), ((2, 5, 3), 1)]:
        close(engine.nn.init.dirac_(engine.empty(*shape), groups), torch.nn.init.dirac_(torch.empty(*shape), groups))
    for name in ["linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid", "tanh", "relu", "leaky_relu", "selu"]:
        assert engine.nn.init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert engine.nn.init.calculate_gain("leaky_relu", 0.2) == pytest.approx(
        torch.nn.init.calculate_gain("leaky_relu", 0.2))


@pytest.mark.parametrize("case", [
    lambda L: L.nn.init.orthogonal_(L.ones(3)),
    lambda L: L.nn.init.sparse_(L.ones(3, 2, 2), 0.1),
    lambda L: L.nn.init.eye_(L.ones(3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3)),
    lambda L: L.nn.init.dirac_(L.ones(3, 3, 3), groups=2),
    lambda L: L.nn.init.calculate_gain("gelu"),
    lambda L: L.autograd.Variable(3),
])
def test_init_errors(torch, case):
    assert error_of(engine, case) == error_of(torch, case)


def test_variable(torch):
    from engine.autograd import Variable

    t = engine.ones(3)
    v = Variable(t, requires_grad=True)
    assert v is not t and v.requires_grad and v.is_leaf and v.grad_fn is None
    assert type(v) is engine.Tensor and isinstance(t, Variable)
    v.data[0] = 5.0
    assert t[0].item() == 5.0  # shares the data, as torch's
    w = Variable(v * 2)
    assert not w.requires_grad and w.grad_fn is None
    (v * 3).sum().backward()
    assert v.grad.tolist() == [3.0, 3.0, 3.0]
    with pytest.warns(UserWarning, match="volatile was removed"):
        Variable(t, volatile=True)
