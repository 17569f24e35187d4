"""The fused LSTM/GRU step (engine/nn/_functional/fused_rnn.py) is the composite cell in one op:
the same values and gradients as rnn._lstm_step/_gru_step, to first and second order."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.autograd.gradcheck import gradcheck, gradgradcheck
from engine.nn._functional.fused_rnn import fused_gru_cell, fused_lstm_cell
from engine.nn.modules import rnn

N, H = 3, 4


def _inputs(gates: int, dtype=engine.float64, seed: int = 0):
    rng = np.random.default_rng(seed)
    return [engine.tensor(rng.standard_normal(shape), dtype=dtype, requires_grad=True)
            for shape in ((N, gates * H), (N, gates * H), (N, H))]


def _composite_lstm(ig, hg, c):
    i, f, g, o = (hg + ig).chunk(4, 1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c.tanh(), c


def _composite_gru(ig, hg, h):
    i_r, i_z, i_n = ig.chunk(3, 1)
    h_r, h_z, h_n = hg.chunk(3, 1)
    r, z = (h_r + i_r).sigmoid(), (h_z + i_z).sigmoid()
    n = (i_n + h_n * r).tanh()
    return (h - n) * z + n


def _grads(outputs, inputs, seed=1):
    rng = np.random.default_rng(seed)
    gouts = [engine.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype) for o in outputs]
    return engine.autograd.grad(outputs, inputs, gouts)


@pytest.mark.parametrize("dtype", [engine.float32, engine.float64])
def test_lstm_values_and_gradients_are_the_composite_cells(dtype):
    inputs = _inputs(4, dtype)
    fused, composite = fused_lstm_cell(*inputs), _composite_lstm(*inputs)
    assert fused[0].grad_fn.name() == "ThnnFusedLstmCellBackward0" and fused[1].grad_fn is fused[0].grad_fn
    for a, b in zip(fused, composite):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())  # same formulas, same order
    tol = 1e-6 if dtype == engine.float32 else 1e-12
    for a, b in zip(_grads(fused, inputs), _grads(composite, inputs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [engine.float32, engine.float64])
def test_gru_values_and_gradients_are_the_composite_cells(dtype):
    inputs = _inputs(3, dtype)
    fused, composite = fused_gru_cell(*inputs), _composite_gru(*inputs)
    assert fused.grad_fn.name() == "ThnnFusedGruCellBackward0"
    np.testing.assert_array_equal(fused.detach().numpy(), composite.detach().numpy())
    tol = 1e-6 if dtype == engine.float32 else 1e-12
    for a, b in zip(_grads([fused], inputs), _grads([composite], inputs)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)


def test_one_output_of_the_lstm_cell_alone():
    """A gradient for h' only (c' unused): the missing one counts as zeros."""
    inputs = _inputs(4)
    (a,) = engine.autograd.grad(fused_lstm_cell(*inputs)[0].sum(), inputs[2])
    (b,) = engine.autograd.grad(_composite_lstm(*inputs)[0].sum(), inputs[2])
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_first_and_second_order_gradients_check_numerically():
    assert gradcheck(lambda *x: fused_lstm_cell(*x), _inputs(4))
    assert gradgradcheck(lambda *x: fused_lstm_cell(*x), _inputs(4))
    assert gradcheck(fused_gru_cell, _inputs(3))
    assert gradgradcheck(fused_gru_cell, _inputs(3))


def test_a_saved_input_changed_in_place_is_caught():
    ig, hg, c = _inputs(4)
    c2 = c * 1  # a non-leaf we may change in place
    h, _ = fused_lstm_cell(ig, hg, c2)
    c2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


def test_the_layers_use_them_and_the_cells_do_not():
    x = engine.randn(5, 2, 3, requires_grad=True)
    for cls, name in ((engine.nn.LSTM, "ThnnFusedLstmCellBackward0"), (engine.nn.GRU, "ThnnFusedGruCellBackward0")):
        out = cls(3, 4)(x)[0]
        names, stack, seen = set(), [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is not None and node not in seen:
                seen.add(node)
                names.add(node.name())
                stack.extend(n for n, _ in node.next_functions)
        assert name in names and "SigmoidBackward0" not in names
    h, _ = engine.nn.LSTMCell(3, 4)(x[0])
    assert h.grad_fn.name() == "MulBackward0"  # the cells stay composite, as torch's CPU cells
    assert rnn._STEPS["RNN_TANH"] is rnn._rnn_tanh_step
