"""linear and bilinear maps, recorded as torch records them (``AddmmBackward0`` for a 2-D linear
with a bias; ``AddBackward0``/``ViewBackward0`` for bilinear)."""

from __future__ import annotations

import numpy as np

import engine._ops.linalg as _linalg
import engine._ops.pointwise as pointwise
import engine._ops.shape as shape_ops

from ..._ops._core import result


def linear(input, weight, bias=None):  # noqa: A002
    """``input @ weight.T + bias`` recorded as torch records it: ``AddmmBackward0`` for 2-D input
    with a bias, ``ViewBackward0(AddmmBackward0)`` for other ranks (the rows folded into one
    matrix); without a bias ``mm`` (2-D) or ``matmul``."""
    w_t = shape_ops.t(weight)
    if bias is None:
        return _linalg.mm(input, w_t) if input.ndim == 2 else _linalg.matmul(input, w_t)
    if input.ndim == 2:
        return _linalg.addmm(bias, input, w_t)
    rows = shape_ops.reshape(input, -1, input.shape[-1]) if input.ndim else input
    out = _linalg.addmm(bias, rows, w_t)
    return shape_ops.view(out, *input.shape[:-1], weight.shape[0])


def bilinear(input1, input2, weight, bias=None):
    """``y_o = x1ᵀ W_o x2 + b_o`` over the last dims of ``input1`` and ``input2``."""
    if input1.ndim != input2.ndim:
        raise RuntimeError(f"bilinear(): input dimensions do not match: got {input1.ndim} and {input2.ndim}")
    for i in range(input1.ndim - 1):
        if input1.shape[i] != input2.shape[i]:
            raise RuntimeError(f"bilinear(): input batch dimensions do not match at dim {i}: got "
                               f"{input1.shape[i]} and {input2.shape[i]}")
    if input1.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got {input1.shape[-1]} but "
                           f"expected {weight.shape[1]}")
    if input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got {input2.shape[-1]} but "
                           f"expected {weight.shape[2]}")
    if bias is not None and bias.shape[0] != weight.shape[0]:
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got {bias.shape[0]} but "
                           f"expected {weight.shape[0]}")
    a = shape_ops.reshape(input1, -1, input1.shape[-1])
    b = shape_ops.reshape(input2, -1, input2.shape[-1])
    y = shape_ops.view(_trilinear(a, weight, b), *input1.shape[:-1], weight.shape[0])
    return y if bias is None else pointwise.add(y, bias)


def _trilinear(a, weight, b):
    """``y[n, o] = Σ a[n, i] W[o, i, j] b[n, j]`` as one node (torch's ``TrilinearBackward0``)."""
    x1, w, x2 = a._data, weight._data, b._data
    out = np.einsum("ni,oij,nj->no", x1, w, x2, optimize=True)

    def backward(g):
        return (np.einsum("no,oij,nj->ni", g, w, x2, optimize=True),
                np.einsum("no,ni,nj->oij", g, x1, x2, optimize=True),
                np.einsum("no,oij,ni->nj", g, w, x1, optimize=True))

    return result(out.astype(x1.dtype, copy=False), "TrilinearBackward0", (a, weight, b), backward,
                  saved=(a, weight, b))
