"""The fused LSTM step (engine/nn/_functional/fused_rnn.py) is the composite cell in one op: the
same values and gradients as rnn._lstm_step, to first and second order; the fused LSTM layer is
the op-by-op layer (input projection, then addmm and the fused cell per step) in one op, the same
values and gradients. nn.GRU stays composite, its graph torch's own."""

from __future__ import annotations

import numpy as np
import pytest

import engine
from engine.autograd.gradcheck import gradcheck, gradgradcheck
from engine.nn._functional.fused_rnn import fused_lstm_cell, lstm_layer, lstm_layer_steps
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


def test_one_output_of_the_lstm_cell_alone():
    """A gradient for h' only (c' unused): the missing one counts as zeros."""
    inputs = _inputs(4)
    (a,) = engine.autograd.grad(fused_lstm_cell(*inputs)[0].sum(), inputs[2])
    (b,) = engine.autograd.grad(_composite_lstm(*inputs)[0].sum(), inputs[2])
    np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_first_and_second_order_gradients_check_numerically():
    assert gradcheck(lambda *x: fused_lstm_cell(*x), _inputs(4))
    assert gradgradcheck(lambda *x: fused_lstm_cell(*x), _inputs(4))


def test_a_saved_input_changed_in_place_is_caught():
    ig, hg, c = _inputs(4)
    c2 = c * 1  # a non-leaf we may change in place
    h, _ = fused_lstm_cell(ig, hg, c2)
    c2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        h.sum().backward()


def _node_names(out) -> set[str]:
    names, stack, seen = set(), [out.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is not None and node not in seen:
            seen.add(node)
            names.add(node.name())
            stack.extend(n for n, _ in node.next_functions)
    return names


def _layer_inputs(bias: bool = True, dtype=engine.float64, steps: int = 4):
    rng = np.random.default_rng(3)
    shapes = [(steps, N, 2), (N, H), (N, H), (4 * H, 2), (4 * H, H)] + ([(4 * H,), (4 * H,)] if bias else [])
    tensors = [engine.tensor(rng.standard_normal(s), dtype=dtype, requires_grad=True) for s in shapes]
    return tensors if bias else tensors + [None, None]


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_lstm_layer_is_the_op_by_op_layer(reverse, bias):
    inputs = _layer_inputs(bias, engine.float32)
    fused, steps = lstm_layer(*inputs, reverse), lstm_layer_steps(*inputs, reverse)
    assert all(o.grad_fn.name() == "MkldnnRnnLayerBackward0" for o in fused)
    assert [o._output_nr for o in fused] == [0, 1, 2]
    for a, b in zip(fused, steps):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())  # same arithmetic, same order
    wanted = [t for t in inputs if t is not None]
    for a, b in zip(_grads(fused, wanted), _grads(steps, wanted)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


def test_lstm_layer_one_output_alone_and_no_graph():
    inputs = _layer_inputs()
    wanted = [t for t in inputs if t is not None]
    a = engine.autograd.grad(lstm_layer(*inputs, False)[1].sum(), wanted)  # h_T only: the rest count as zeros
    b = engine.autograd.grad(lstm_layer_steps(*inputs, False)[1].sum(), wanted)
    for x, y in zip(a, b):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-12, atol=1e-12)
    with engine.no_grad():
        assert all(o.grad_fn is None for o in lstm_layer(*inputs, False))


def test_lstm_layer_first_and_second_order_gradients_check_numerically():
    inputs = [t for t in _layer_inputs(steps=3)]

    def fn(*x):
        return lstm_layer(*x, True)

    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


def test_lstm_layer_catches_a_saved_input_changed_in_place():
    x, hx, cx, *weights = _layer_inputs()
    x2 = x * 1
    out, _, _ = lstm_layer(x2, hx, cx, *weights, False)
    x2.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_lstm_uses_the_layer_op_and_gru_and_the_cells_do_not():
    x = engine.randn(5, 2, 3, requires_grad=True)
    names = _node_names(engine.nn.LSTM(3, 4)(x)[0])
    assert names == {"MkldnnRnnLayerBackward0", "AccumulateGrad"}
    names = _node_names(engine.nn.LSTM(3, 4, proj_size=2)(x)[0])  # no fused layer with projections
    assert "ThnnFusedLstmCellBackward0" in names and "SigmoidBackward0" not in names
    h, _ = engine.nn.LSTMCell(3, 4)(x[0])
    assert h.grad_fn.name() == "MulBackward0"  # the cells stay composite, as torch's CPU cells
    assert rnn._STEPS["RNN_TANH"] is rnn._rnn_tanh_step and rnn._STEPS["GRU"] is rnn._gru_step


@pytest.mark.parametrize("name", ["GRU", "GRUCell", "LSTMCell", "RNN"])
def test_the_composite_ones_draw_the_nodes_torch_draws_on_cpu(name):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(0).standard_normal((5, 2, 3)).astype(np.float32)
    x = x[0] if name.endswith("Cell") else x

    def names(lib):
        out = getattr(lib.nn, name)(3, 4)(lib.tensor(x, requires_grad=True))
        out = out[0] if isinstance(out, tuple) else out
        return {n.replace("torch::autograd::", "") for n in _node_names(out)}

    assert names(engine) == names(torch), names(engine) ^ names(torch)


def test_unsafe_split_and_chunk_are_splits_not_marked_as_views():
    torch = pytest.importorskip("torch")
    for lib in (engine, torch):
        x = lib.arange(6.0, requires_grad=True) * 1
        a, b = x.unsafe_chunk(2)
        c = x.unsafe_split_with_sizes([2, 4])[0]
        assert (a.grad_fn.name(), c.grad_fn.name()) == ("UnsafeSplitBackward0", "UnsafeSplitWithSizesBackward0")
        assert a._base is None
        (a.sum() * 2 + b.sum()).backward()
