"""normalize, cosine_similarity, pairwise_distance, recorded as torch composes them:

- ``normalize``: ``x / norm(x).clamp_min(eps).expand_as(x)`` (``DivBackward0`` over
  ``ExpandBackward0`` over ``ClampMinBackward0`` over ``LinalgVectorNormBackward0``);
- ``cosine_similarity``: ``sum((x1 / |x1|) * (x2 / |x2|), dim)``, where each norm is cloned and
  clamped to ``eps`` outside autograd (so the gradient flows through the unclamped norm, as in
  torch);
- ``pairwise_distance``: ``norm(x1 - x2 + eps, p, -1)`` (``NormBackward1`` over ``AddBackward1``).
"""

from __future__ import annotations

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine.autograd.grad_mode as grad_mode

from ..._ops._core import broadcast_error, result, wrap_dim


def _clamp_min(a, lo: float):
    """``a.clamp_min(lo)`` as one ``ClampMinBackward0`` node (gradient where ``a >= lo``)."""
    x = a._data
    out = np.maximum(x, x.dtype.type(lo))
    return result(out, "ClampMinBackward0", (a,), lambda g: (g * (x >= lo),), saved=(a,))


def normalize(input, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out=None):  # noqa: A002
    """``input`` divided by its ``p``-norm over ``dim`` (at least ``eps``); with ``out`` (of the
    result's shape: the engine does not resize it) the result is written there, outside autograd,
    as torch's ``div(out=)``."""
    if out is None:
        denom = _clamp_min(reduction.norm(input, p, dim, keepdim=True), eps).expand_as(input)
        return pointwise.div(input, denom)
    if grad_mode.is_grad_enabled() and input.requires_grad:
        raise RuntimeError("div(): functions with out=... arguments don't support automatic differentiation, "
                           "but one of the arguments requires grad.")
    if tuple(out.shape) != tuple(input.shape):
        raise RuntimeError(f"normalize: out= must have the result's shape {list(input.shape)} in engine "
                           f"(got {list(out.shape)}; torch resizes it, with a deprecation warning)")
    with grad_mode.no_grad():
        return out.copy_(normalize(input, p, dim, eps))


def _broadcast(x1, x2):
    try:
        shape = np.broadcast_shapes(x1.shape, x2.shape)
    except ValueError:
        raise broadcast_error(tuple(x1.shape), tuple(x2.shape)) from None
    return (x1 if tuple(x1.shape) == shape else x1.expand(*shape),
            x2 if tuple(x2.shape) == shape else x2.expand(*shape))


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """``Σ x1·x2 / (max(‖x1‖, eps) · max(‖x2‖, eps))`` over ``dim`` (inputs broadcast first)."""
    x1, x2 = _broadcast(x1, x2)
    dim = wrap_dim(dim, x1.ndim)
    n1 = reduction.norm(x1, 2, dim, keepdim=True).clone()
    n2 = reduction.norm(x2, 2, dim, keepdim=True).clone()
    with grad_mode.no_grad():  # torch clamps in place outside autograd: the gradient ignores it
        for n in (n1, n2):
            np.maximum(n._data, eps, out=n._data)
    return reduction.sum(pointwise.mul(pointwise.div(x1, n1), pointwise.div(x2, n2)), dim)


def _add_scalar(a, value: float):
    """``a + value`` as ATen's scalar overload records it (``AddBackward1``)."""
    out = a._data + a._data.dtype.type(value)
    return result(out, "AddBackward1", (a,), lambda g: (g,))


def _vector_norm(a, p: float, dim: int, keepdim: bool):
    """``torch.norm(a, p, dim)`` as one ``NormBackward1`` node; the gradient at a zero norm is 0."""
    x = a._data
    ax = np.abs(x)
    if p == float("inf"):
        n = ax.max(axis=dim, keepdims=True)
    elif p == 0:
        n = (x != 0).sum(axis=dim, keepdims=True).astype(x.dtype)
    else:
        n = (ax ** p).sum(axis=dim, keepdims=True) ** (1.0 / p)
    n = n.astype(x.dtype, copy=False)

    def backward(g):
        g = g if keepdim else np.expand_dims(g, dim)
        safe = np.where(n == 0, 1, n)
        if p == float("inf"):
            hit = ax == n
            gx = np.sign(x) * hit / hit.sum(axis=dim, keepdims=True) * g
        elif p == 0:
            gx = np.zeros_like(x)
        elif p == 1:
            gx = np.sign(x) * g
        else:
            mag = np.power(ax, p - 1, where=ax > 0, out=np.zeros_like(ax))  # 0 at 0 for any p > 0
            gx = np.sign(x) * mag / safe ** (p - 1) * g
        return (np.where(n == 0, 0, gx).astype(x.dtype, copy=False),)

    return result(n if keepdim else np.squeeze(n, dim), "NormBackward1", (a,), backward, saved=(a,),
                  save_output=True)


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    diff = pointwise.sub(x1, x2)
    return _vector_norm(_add_scalar(diff, eps), float(p), max(diff.ndim - 1, 0), keepdim)
