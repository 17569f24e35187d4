"""The gate arithmetic of one LSTM time step as one op, as torch's fused cell
(``torch._thnn_fused_lstm_cell``, node ``ThnnFusedLstmCellBackward0``), and a whole LSTM layer as
one op (``lstm_layer``, node ``MkldnnRnnLayerBackward0``), as torch's CPU ``nn.LSTM`` records it.

Why a fused op: a step of the composite cell is a dozen element-wise ops on small (N, 4H)
arrays (add, split, three sigmoids, two tanh, three products, a sum), and in the engine each op
costs more in Python bookkeeping (a Tensor, a node, a closure) than in NumPy arithmetic. A
sequence runs the step T times per layer, so ``nn.LSTM`` spends most of its time
there. Here the step is one forward and one hand-written backward on arrays, with the same
formulas in the same order as the composite cell (``rnn._lstm_step``), so its
values are the composite's. torch fuses the same way: its CPU ``nn.LSTM`` records one
``MkldnnRnnLayerBackward0`` per layer, its CUDA cell this ``ThnnFused*`` node. ``LSTMCell``
stays composite, as torch's CPU cell is; so does ``nn.GRU``, whose CPU graph in torch is op by op
(a fused step would draw, and diff, nodes torch never makes).

Inputs: ``igates`` (the input projection of the step, ``x_t W_ihᵀ + b_ih``), ``hgates`` (``h
W_hhᵀ + b_hh``) and the previous cell state; the matrix products
stay ``addmm`` nodes of their own. Double backward (``create_graph=True``) runs the composite
formulas on the inputs with engine ops.
"""

from __future__ import annotations

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.shape as shape_ops

from ..._ops._core import multi_result
from ..._ops.linalg import _mm
from ..._ops.pointwise import _sigmoid
from ..._tensor import Tensor
from ...autograd.differentiate import grad
from .linear import linear


def fused_lstm_cell(igates: Tensor, hgates: Tensor, cx: Tensor) -> tuple[Tensor, Tensor]:
    """``(h', c')`` of one LSTM step: gates ``(i, f, g, o) = hgates + igates``,
    ``c' = σ(f)·c + σ(i)·tanh(g)``, ``h' = σ(o)·tanh(c')``."""
    c, n = cx._data, cx._data.shape[1]
    hy, cy, sig, tg, tc = lstm_cell_arrays(igates._data, hgates._data, c)
    si, sf, so = sig[:, :n], sig[:, n:2 * n], sig[:, 3 * n:]

    def backward(gh, gc):
        # the composite cell's backward, op by op: h' = so·tc, tc = tanh(c'), c' = sf·c + si·tg
        gcy = gc + (gh * so) * (1 - tc * tc)
        d_i = (gcy * tg) * (si * (1 - si))
        d_f = (gcy * c) * (sf * (1 - sf))
        d_g = (gcy * si) * (1 - tg * tg)
        d_o = (gh * tc) * (so * (1 - so))
        dgates = np.concatenate((d_i, d_f, d_g, d_o), axis=1)
        return dgates, dgates, gcy * sf

    def tensor_backward(gh, gc):
        gi, gf, gg, go = shape_ops.chunk(pointwise.add(hgates, igates), 4, 1)
        ti, tf, tg_, to = pointwise.sigmoid(gi), pointwise.sigmoid(gf), pointwise.tanh(gg), pointwise.sigmoid(go)
        tcy = pointwise.tanh(pointwise.add(pointwise.mul(tf, cx), pointwise.mul(ti, tg_)))
        gcy = pointwise.add(gc, pointwise.mul(pointwise.mul(gh, to), _one_minus_square(tcy)))
        parts = [pointwise.mul(pointwise.mul(gcy, tg_), _sigmoid_slope(ti)),
                 pointwise.mul(pointwise.mul(gcy, cx), _sigmoid_slope(tf)),
                 pointwise.mul(pointwise.mul(gcy, ti), _one_minus_square(tg_)),
                 pointwise.mul(pointwise.mul(gh, tcy), _sigmoid_slope(to))]
        dgates = shape_ops.cat(parts, 1)
        return dgates, dgates, pointwise.mul(gcy, tf)

    return tuple(multi_result([hy, cy], "ThnnFusedLstmCellBackward0", (igates, hgates, cx), backward,
                              saved=(igates, hgates, cx), tensor_backward=tensor_backward))


def lstm_cell_arrays(igates: np.ndarray, hgates: np.ndarray, c: np.ndarray) -> tuple[np.ndarray, ...]:
    """The step's forward on arrays: ``(h', c')`` and what the backward reads (the gates'
    sigmoids, ``tanh(g)``, ``tanh(c')``). ``nn.LSTM`` also runs it alone when no graph is
    recorded (``no_grad``, inference): the same values, without a Tensor per step."""
    n = c.shape[1]
    gates = hgates + igates
    # one sigmoid over all four gates (element-wise: the same values as one per gate), g's unused
    sig = _sigmoid(gates)
    tg = np.tanh(gates[:, 2 * n:3 * n])
    cy = sig[:, n:2 * n] * c + sig[:, :n] * tg
    tc = np.tanh(cy)
    return sig[:, 3 * n:] * tc, cy, sig, tg, tc


def lstm_layer(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
               b_hh: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor, Tensor]:
    """One layer and direction of ``nn.LSTM`` over a time-major ``(T, N, H_in)`` input as one op,
    as torch's CPU LSTM records it (``MkldnnRnnLayerBackward0``, inputs ``(input, w_ih, w_hh,
    b_ih, b_hh, hx, cx)``): ``(output, h_T, c_T)``.

    Why one op: a step recorded op by op is an ``addmm``, its weight's transpose view, the fused
    cell and a piece of the input projection, each a Tensor and a node in forward and a node to
    run in backward, on arrays so small that this bookkeeping costs more than the arithmetic. The
    step's arithmetic is the same as there (``addmm``'s product then bias, ``lstm_cell_arrays``),
    so the forward values are the op-by-op path's; backward is backpropagation through time on
    arrays, each step the fused cell's backward, with the weights' gradients as one product over
    all steps. Double backward (``create_graph=True``) differentiates the op-by-op path
    (``lstm_layer_steps``) rebuilt from the same inputs."""
    X = x._data
    steps, batch, n = X.shape[0], X.shape[1], hx._data.shape[1]
    w_ih_t, w_hh_t = w_ih._data.T, w_hh._data.T
    rows = X.reshape(steps * batch, X.shape[2])
    igates = _mm(rows, w_ih_t)  # the input projection of every step in one product (F.linear's addmm)
    if b_ih is not None:
        igates += b_ih._data
    igates = igates.reshape(steps, batch, 4 * n)
    h, c = hx._data, cx._data
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    outputs: list[np.ndarray] = [None] * steps  # type: ignore[list-item]
    tape: list[tuple] = [None] * steps  # type: ignore[list-item]  (per step: what its backward reads)
    for t in order:
        hgates = _mm(h, w_hh_t)
        if b_hh is not None:
            hgates += b_hh._data
        h_new, c_new, sig, tg, tc = lstm_cell_arrays(igates[t], hgates, c)
        tape[t] = (h, c, sig, tg, tc)
        outputs[t] = h = h_new
        c = c_new
    out = np.stack(outputs, 0)

    def backward(g_out, g_hy, g_cy):
        dgates = np.empty((steps, batch, 4 * n), out.dtype)
        dh, dc = g_hy, g_cy
        for t in reversed(order):  # the steps in the reverse of the order they ran
            _, c_prev, sig, tg, tc = tape[t]
            si, sf, so = sig[:, :n], sig[:, n:2 * n], sig[:, 3 * n:]
            gh = dh + g_out[t]
            # the fused cell's backward (see ``fused_lstm_cell``), written into this step's rows
            gcy = dc + (gh * so) * (1 - tc * tc)
            slope = sig * (1 - sig)  # the sigmoid's derivative for every gate at once (g's unused)
            d = dgates[t]
            d[:, :n] = (gcy * tg) * slope[:, :n]
            d[:, n:2 * n] = (gcy * c_prev) * slope[:, n:2 * n]
            d[:, 2 * n:3 * n] = (gcy * si) * (1 - tg * tg)
            d[:, 3 * n:] = (gh * tc) * slope[:, 3 * n:]
            dc = gcy * sf
            dh = _mm(d, w_hh._data)  # through hgates = h @ w_hhᵀ
        flat = dgates.reshape(steps * batch, 4 * n)
        h_prev = np.stack([tape[t][0] for t in range(steps)], 0).reshape(steps * batch, n)
        db = np.add.reduce(flat, axis=0)
        return (_mm(flat, w_ih._data).reshape(X.shape), _mm(flat.T, rows), _mm(flat.T, h_prev),
                db if b_ih is not None else None, db if b_hh is not None else None, dh, dc)

    inputs = (x, w_ih, w_hh, b_ih, b_hh, hx, cx)

    def tensor_backward(g_out, g_hy, g_cy):
        wanted = [t for t in inputs if t is not None and t.requires_grad]
        rebuilt = lstm_layer_steps(x, hx, cx, w_ih, w_hh, b_ih, b_hh, reverse)
        grads = iter(grad(rebuilt, wanted, (g_out, g_hy, g_cy), create_graph=True, allow_unused=True))
        return tuple(next(grads) if t is not None and t.requires_grad else None for t in inputs)

    return tuple(multi_result([out, h, c], "MkldnnRnnLayerBackward0", inputs, backward,
                              saved=(x, w_ih, w_hh, hx, cx), tensor_backward=tensor_backward))


def lstm_layer_steps(x: Tensor, hx: Tensor, cx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None,
                     b_hh: Tensor | None, reverse: bool) -> tuple[Tensor, Tensor, Tensor]:
    """``lstm_layer`` recorded op by op (the input projection, then per step an ``addmm`` and the
    fused cell): what its double backward differentiates."""
    igates = linear(x, w_ih, b_ih).unbind(0)
    h, c = hx, cx
    outputs: list[Tensor] = [None] * len(igates)  # type: ignore[list-item]
    for t in reversed(range(len(igates))) if reverse else range(len(igates)):
        h, c = fused_lstm_cell(igates[t], linear(h, w_hh, b_hh), c)
        outputs[t] = h
    return shape_ops.stack(outputs, 0), h, c


def _sigmoid_slope(s: Tensor) -> Tensor:
    """``s·(1 - s)``: the derivative of the sigmoid whose value is ``s``."""
    return pointwise.mul(s, pointwise.rsub(s, 1))


def _one_minus_square(t: Tensor) -> Tensor:
    """``1 - t²``: the derivative of the tanh whose value is ``t``."""
    return pointwise.rsub(pointwise.mul(t, t), 1)
