"""The gate arithmetic of one LSTM or GRU time step as one op, as torch's fused cells
(``torch._thnn_fused_lstm_cell`` / ``_thnn_fused_gru_cell``, node ``ThnnFused*CellBackward0``).

Why a fused op: a step of the composite cell is a dozen element-wise ops on small (N, 4H)
arrays (add, split, three sigmoids, two tanh, three products, a sum), and in the engine each op
costs more in Python bookkeeping (a Tensor, a node, a closure) than in NumPy arithmetic. A
sequence runs the step T times per layer, so ``nn.LSTM``/``nn.GRU`` spend most of their time
there. Here the step is one forward and one hand-written backward on arrays, with the same
formulas in the same order as the composite cell (``rnn._lstm_step``/``_gru_step``), so its
values are the composite's. torch fuses the same way: its CPU ``nn.LSTM`` records one
``MkldnnRnnLayerBackward0`` per layer, its CUDA cells these ``ThnnFused*`` nodes. ``LSTMCell`` and
``GRUCell`` stay composite, as torch's CPU cells are.

Inputs: ``igates`` (the input projection of the step, ``x_t W_ihᵀ + b_ih``), ``hgates`` (``h
W_hhᵀ + b_hh``) and the previous cell state (LSTM) or hidden state (GRU); the matrix products
stay ``addmm`` nodes of their own. Double backward (``create_graph=True``) runs the composite
formulas on the inputs with engine ops.
"""

from __future__ import annotations

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.shape as shape_ops

from ..._ops._core import multi_result, result
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


def fused_gru_cell(igates: Tensor, hgates: Tensor, hx: Tensor) -> Tensor:
    """``h'`` of one GRU step: ``r = σ(i_r + h_r)``, ``z = σ(i_z + h_z)``,
    ``n = tanh(i_n + r·h_n)``, ``h' = (h - n)·z + n``."""
    h, k = hx._data, hx._data.shape[1]
    ig, hg = igates._data, hgates._data
    rz = _sigmoid(hg[:, :2 * k] + ig[:, :2 * k])  # r and z in one call (element-wise: the same values)
    r, z, h_n = rz[:, :k], rz[:, k:], hg[:, 2 * k:]
    n = np.tanh(ig[:, 2 * k:] + h_n * r)
    hy = (h - n) * z + n

    def backward(gh):
        # the composite cell's backward, op by op: h' = (h - n)·z + n
        d_n = gh - gh * z
        d_npre = d_n * (1 - n * n)
        d_r = (d_npre * h_n) * (r * (1 - r))
        d_z = (gh * (h - n)) * (z * (1 - z))
        d_igates = np.concatenate((d_r, d_z, d_npre), axis=1)
        d_hgates = np.concatenate((d_r, d_z, d_npre * r), axis=1)
        return d_igates, d_hgates, gh * z

    def tensor_backward(gh):
        ti_r, ti_z, ti_n = shape_ops.chunk(igates, 3, 1)
        th_r, th_z, th_n = shape_ops.chunk(hgates, 3, 1)
        tr = pointwise.sigmoid(pointwise.add(th_r, ti_r))
        tz = pointwise.sigmoid(pointwise.add(th_z, ti_z))
        tn = pointwise.tanh(pointwise.add(ti_n, pointwise.mul(th_n, tr)))
        d_npre = pointwise.mul(pointwise.sub(gh, pointwise.mul(gh, tz)), _one_minus_square(tn))
        d_r = pointwise.mul(pointwise.mul(d_npre, th_n), _sigmoid_slope(tr))
        d_z = pointwise.mul(pointwise.mul(gh, pointwise.sub(hx, tn)), _sigmoid_slope(tz))
        return (shape_ops.cat([d_r, d_z, d_npre], 1), shape_ops.cat([d_r, d_z, pointwise.mul(d_npre, tr)], 1),
                pointwise.mul(gh, tz))

    return result(hy, "ThnnFusedGruCellBackward0", (igates, hgates, hx), backward,
                  saved=(igates, hgates, hx), tensor_backward=tensor_backward)


def _sigmoid_slope(s: Tensor) -> Tensor:
    """``s·(1 - s)``: the derivative of the sigmoid whose value is ``s``."""
    return pointwise.mul(s, pointwise.rsub(s, 1))


def _one_minus_square(t: Tensor) -> Tensor:
    """``1 - t²``: the derivative of the tanh whose value is ``t``."""
    return pointwise.rsub(pointwise.mul(t, t), 1)
