"""The gate arithmetic of one LSTM time step as one op, as torch's fused cell
(``torch._thnn_fused_lstm_cell``, node ``ThnnFusedLstmCellBackward0``).

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
from ..._ops.pointwise import _sigmoid
from ..._tensor import Tensor


def fused_lstm_cell(igates: Tensor, hgates: Tensor, cx: Tensor) -> tuple[Tensor, Tensor]:
    """``(h', c')`` of one LSTM step: gates ``(i, f, g, o) = hgates + igates``,
    ``c' = σ(f)·c + σ(i)·tanh(g)``, ``h' = σ(o)·tanh(c')``."""
    c, n = cx._data, cx._data.shape[1]
    gates = hgates._data + igates._data
    # one sigmoid over all four gates (element-wise: the same values as one per gate), g's unused
    sig = _sigmoid(gates)
    si, sf, so = sig[:, :n], sig[:, n:2 * n], sig[:, 3 * n:]
    tg = np.tanh(gates[:, 2 * n:3 * n])
    cy = sf * c + si * tg
    tc = np.tanh(cy)
    hy = so * tc

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


def _sigmoid_slope(s: Tensor) -> Tensor:
    """``s·(1 - s)``: the derivative of the sigmoid whose value is ``s``."""
    return pointwise.mul(s, pointwise.rsub(s, 1))


def _one_minus_square(t: Tensor) -> Tensor:
    """``1 - t²``: the derivative of the tanh whose value is ``t``."""
    return pointwise.rsub(pointwise.mul(t, t), 1)
