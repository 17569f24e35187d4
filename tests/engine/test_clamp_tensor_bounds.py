"""``clamp`` with two tensor bounds against torch, where min > max somewhere (torch's result there
is max, so max -- and not min -- gets the gradient)."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from tests.gradcheck import gradcheck

X = [-2.0, 0.5, 3.0, 1.0, 2.5, -1.0]
LO = [1.0, 1.0, 1.0, 2.0, 0.0, 0.0]    # first three: min > max
HI = [0.0, 0.0, 0.0, 3.0, 2.0, 1.0]
G = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def _run(lib, x, lo, hi, dtype):
    ts = [lib.tensor(v, dtype=dtype, requires_grad=True) for v in (x, lo, hi)]
    out = lib.clamp(*ts)
    out.backward(lib.tensor(np.broadcast_to(np.array(G[:out.shape[-1]]), out.shape).copy(), dtype=dtype))
    return out, [t.grad for t in ts]


def test_clamp_tensor_bounds_min_above_max_gradients():
    out, (gx, glo, ghi) = _run(engine, X, LO, HI, engine.float32)
    # hand-worked: the result is max wherever min > max, whatever x is
    np.testing.assert_array_equal(out.detach().numpy(), [0, 0, 0, 2, 2, 0])
    np.testing.assert_array_equal(gx.numpy(), [0, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(glo.numpy(), [0, 0, 0, 4, 0, 6])
    np.testing.assert_array_equal(ghi.numpy(), [1, 2, 3, 0, 5, 0])
    assert out.grad_fn.name() == "ClampBackward0"


@pytest.mark.parametrize("case", ["inverted", "broadcast_bounds", "ties"])
def test_clamp_tensor_bounds_parity(case):
    torch = pytest.importorskip("torch")
    x, lo, hi = X, LO, HI
    if case == "broadcast_bounds":
        x = [X, [v * 0.5 for v in X]]
    if case == "ties":  # x equal to a bound, and min == max
        x, lo, hi = [1.0, 0.0, 2.0, 1.0, 0.5, 3.0], [1.0, 0.0, 1.0, 1.0, 1.0, 2.0], [2.0, 0.0, 2.0, 1.0, 0.0, 3.0]
    e_out, e_grads = _run(engine, x, lo, hi, engine.float32)
    t_out, t_grads = _run(torch, x, lo, hi, torch.float32)
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy())
    for e, t in zip(e_grads, t_grads):
        np.testing.assert_allclose(e.numpy(), t.numpy())
    assert e_out.grad_fn.name() == t_out.grad_fn.name()


def test_clamp_tensor_bounds_gradcheck():
    rng = np.random.default_rng(0)
    # bounds drawn independently so that min > max in about half the places; the gaps keep every
    # point away from a kink, where central differences are meaningless
    x = rng.choice([-3.0, -1.0, 1.0, 3.0], size=(4, 5)) + rng.uniform(-0.2, 0.2, (4, 5))
    lo = rng.choice([-2.0, 0.0, 2.0], size=(4, 5)) + rng.uniform(-0.2, 0.2, (4, 5))
    hi = rng.choice([-2.0, 0.0, 2.0], size=(1, 5)) + rng.uniform(-0.2, 0.2, (1, 5)) + 0.5
    assert (lo > hi).any() and (lo < hi).any()
    ts = [engine.tensor(v, dtype=engine.float64, requires_grad=True) for v in (x, lo, hi)]
    gradcheck(engine.clamp, *ts)
