"""The remaining losses of torch.nn.functional: smooth_l1/huber, kl_div, the margin losses,
triplet/cosine/hinge embedding losses, gaussian and poisson NLL.

Fused nodes where torch has one (``SmoothL1LossBackward0``, ``HuberLossBackward0``,
``SoftMarginLossBackward0``, ``MultiMarginLossBackward0``, ``MultilabelMarginLossBackward0``);
the others are written as torch composes them (ATen's composite kernels or torch's Python), so
the recorded graph ends in the same node (``MeanBackward0``, ``ClampMinBackward0``, ...).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.special as special

from ..._ops._core import result
from ..._tensor import Tensor
from ._utils import check_reduction, legacy_type_name, shape_str
from .activation import logsigmoid
from .distance import _clamp_min, pairwise_distance
from .loss import _add_scalar, _broadcast_pair, _expand_grad, _reduce, _reduction, _warn_size, l1_loss


def _apply_reduction(loss, how: str):
    """ATen's ``apply_loss_reduction``: the tensor, its mean or its sum."""
    if how == "none":
        return loss
    return red.mean(loss) if how == "mean" else red.sum(loss)


def _pointwise_loss(input, target, name: str, how: str, fwd, dfd, target_grad: bool = True):  # noqa: A002
    """A fused element-wise loss of ``d = input - target``: value ``fwd(d)``, derivative ``dfd(d)``
    (``-dfd(d)`` for the target), reduced inside the node as ATen's kernels do."""
    d = input._data - target._data
    out = _reduce(fwd(d).astype(d.dtype, copy=False), how)
    ra, rb = input._requires_grad, target._requires_grad and target_grad

    def backward(g):
        gd = (dfd(d) * _expand_grad(g, d.shape, how, d.size)).astype(g.dtype, copy=False)
        return (gd if ra else None, -gd if rb else None)

    return result(out, name, (input, target if target_grad else None), backward, saved=(input, target))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
                   beta: float = 1.0):
    """``0.5·d²/beta`` where ``|d| < beta``, else ``|d| - 0.5·beta`` (``d = input - target``);
    ``beta == 0`` is ``l1_loss``, as in torch."""
    _warn_size(input, target)
    how = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if beta == 0.0:
        return l1_loss(input, target, reduction=how)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    b = float(beta)
    return _pointwise_loss(
        input, target, "SmoothL1LossBackward0", how,
        lambda d: np.where(np.abs(d) < b, 0.5 * d * d / b, np.abs(d) - 0.5 * b),
        lambda d: np.where(d < -b, -1.0, np.where(d > b, 1.0, d / b)),
    )


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):  # noqa: A002
    """``0.5·d²`` where ``|d| < delta``, else ``delta·(|d| - 0.5·delta)``; with ``weight`` (the
    input's shape) the per-element losses are weighted, then reduced."""
    _warn_size(input, target)
    input, target = _broadcast_pair(input, target)
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    dl = float(delta)

    def fused(how):
        return _pointwise_loss(
            input, target, "HuberLossBackward0", how,
            lambda d: np.where(np.abs(d) < dl, 0.5 * d * d, dl * (np.abs(d) - 0.5 * dl)),
            lambda d: np.where(d < -dl, -dl, np.where(d > dl, dl, d)),
        )

    if weight is None:
        return fused(check_reduction(reduction))
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = pointwise.mul(fused("none"), weight)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'.")
    return _apply_reduction(weighted, reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
           log_target: bool = False):
    """KL divergence of ``target`` from the log-probabilities ``input``: ``target·(log target -
    input)`` (``exp(target)·(target - input)`` when ``log_target``). ``'batchmean'`` sums and
    divides by the batch size (the mathematical KL); ``'mean'`` averages over all elements and
    warns, as torch does."""
    if size_average is not None or reduce is not None:
        how = _reduction(size_average, reduce, reduction)
    else:
        if reduction == "mean":
            warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support size."
                "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                stacklevel=2,
            )
        how = "sum" if reduction == "batchmean" else check_reduction(reduction)
    if log_target:
        loss = pointwise.mul(pointwise.exp(target), pointwise.sub(target, input))
    else:
        loss = pointwise.sub(special.xlogy(target, target), pointwise.mul(target, input))
    out = _apply_reduction(loss, how)
    if reduction == "batchmean" and input.ndim != 0:
        out = pointwise.div(out, input.shape[0])
    return out


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):  # noqa: A002
    """``log(1 + exp(-target·input))`` per element (targets ±1), then the reduction."""
    how = _reduction(size_average, reduce, reduction)
    x, y = input._data, target._data
    if x.size != y.size:
        raise RuntimeError(
            f"The size of tensor a ({x.shape[-1] if x.ndim else 1}) must match the size of tensor b "
            f"({y.shape[-1] if y.ndim else 1}) at non-singleton dimension {max(x.ndim, 1) - 1}"
        )
    y = y.reshape(x.shape)
    z = -y * x
    out = _reduce(np.logaddexp(0, z).astype(x.dtype, copy=False), how)

    def backward(g):
        sig = 0.5 * (1 + np.tanh(0.5 * z))  # sigmoid(z), overflow-free
        return ((-y * sig * _expand_grad(g, x.shape, how, x.size)).astype(g.dtype, copy=False),)

    return result(out, "SoftMarginLossBackward0", (input,), backward, saved=(input, target))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                reduction: str = "mean"):
    """``-(t·logσ(x) + (1-t)·logσ(-x))`` averaged over the classes (last dim), then reduced."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    loss = pointwise.neg(pointwise.add(pointwise.mul(target, logsigmoid(input)),
                                       pointwise.mul((1 - target), logsigmoid(pointwise.neg(input)))))
    if weight is not None:
        loss = pointwise.mul(loss, weight)
    class_dim = input.ndim - 1
    loss = pointwise.div(red.sum(loss, class_dim), input.shape[class_dim])
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _apply_reduction(loss, reduction)


def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """``max(0, -target·(input1 - input2) + margin)``, then the reduction."""
    how = _reduction(size_average, reduce, reduction)
    if input1.ndim != input2.ndim or input1.ndim != target.ndim:
        raise RuntimeError(
            "margin_ranking_loss : All input tensors should have same dimension but got sizes: "
            f"input1: {input1.size()}, input2: {input2.size()}, target: {target.size()} "
        )
    scaled = pointwise.mul(pointwise.neg(target), pointwise.sub(input1, input2))
    return _apply_reduction(_clamp_min(_add_scalar(scaled, margin), 0), how)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,  # noqa: A002
                         reduction: str = "mean"):
    """``input`` where ``target == 1``, ``max(0, margin - input)`` where ``target == -1``."""
    how = _reduction(size_average, reduce, reduction)
    zeros = Tensor._wrap(np.zeros_like(input._data))
    margin_clamp = _clamp_min(pointwise.sub(Tensor._wrap(np.asarray(margin, input._data.dtype)), input), 0)
    output_margin = pointwise.where(pointwise.ne(target, 1), margin_clamp, zeros)
    output_self = pointwise.where(pointwise.ne(target, -1), input, zeros)
    return _apply_reduction(pointwise.add(output_margin, output_self), how)


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None, reduce=None,
                          reduction: str = "mean"):
    """``1 - cos(x1, x2)`` where ``target == 1``, ``max(0, cos(x1, x2) - margin)`` where
    ``target == -1`` (cosine over the last dim, squared norms padded by 1e-12 as in ATen)."""
    how = _reduction(size_average, reduce, reduction)
    tdim = target.ndim
    if tdim not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if tdim == 1 and (input1.ndim != 2 or input2.ndim != 2):
        raise RuntimeError(
            "1D target tensor expects 2D input tensors, but found inputs with sizes "
            f"{shape_str(input1.shape)} and {shape_str(input2.shape)}."
        )
    if tdim == 0 and (input1.ndim != 1 or input2.ndim != 1):
        raise RuntimeError(
            "0D target tensor expects 1D input tensors, but found inputs with sizes "
            f"{shape_str(input1.shape)} and {shape_str(input2.shape)}."
        )
    prod_sum = red.sum(pointwise.mul(input1, input2), tdim)
    mag1 = _add_scalar(red.sum(pointwise.mul(input1, input1), tdim), 1e-12)
    mag2 = _add_scalar(red.sum(pointwise.mul(input2, input2), tdim), 1e-12)
    cos = pointwise.div(prod_sum, pointwise.sqrt(pointwise.mul(mag1, mag2)))
    zeros = Tensor._wrap(np.zeros_like(cos._data))
    pos = pointwise.sub(Tensor._wrap(np.ones((), cos._data.dtype)), cos)
    neg = _clamp_min(_add_scalar(cos, -margin, "SubBackward1"), 0)
    out = pointwise.add(pointwise.where(pointwise.eq(target, 1), pos, zeros),
                        pointwise.where(pointwise.eq(target, -1), neg, zeros))
    return _apply_reduction(out, how)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None, reduction: str = "mean"):
    """``max(0, margin + d(a, p) - d(a, n))`` with ``d`` the ``p``-norm pairwise distance;
    ``swap`` uses ``min(d(a, n), d(p, n))`` for the negative distance."""
    how = _reduction(size_average, reduce, reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
            f"but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
        )
    dist_pos = pairwise_distance(anchor, positive, p, eps)
    dist_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        dist_neg = pointwise.minimum(dist_neg, pairwise_distance(positive, negative, p, eps))
    out = _clamp_min(pointwise.sub(_add_scalar(dist_pos, margin), dist_neg), 0)
    return _apply_reduction(out, how)


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,  # noqa: A002
                      reduction: str = "mean"):
    """``0.5·(log var + (input - target)² / var)`` (+ ``0.5·log 2π`` when ``full``), with ``var``
    clamped to ``eps`` outside autograd; ``var`` may be a float, the input's shape, or the input's
    shape with one dim of size 1 (or the last dim missing)."""
    if isinstance(var, float):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = Tensor._wrap(np.full(input.shape, var, input._data.dtype))
    elif bool((var._data < 0).any()):
        raise ValueError("var has negative entry/entries")
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            var = var.unsqueeze(-1)
        elif input.ndim == var.ndim and sum(y for x, y in zip(input.shape, var.shape) if x != y) == 1:
            pass
        else:
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var.clone()
    np.maximum(var._data, eps, out=var._data)  # torch clamps under no_grad: the gradient ignores it
    sq = pointwise.pow(pointwise.sub(input, target), 2)
    loss = pointwise.mul(pointwise.add(pointwise.log(var), pointwise.div(sq, var)), 0.5)
    if full:
        loss = pointwise.add(loss, 0.5 * math.log(2 * math.pi))
    return _apply_reduction(loss, reduction)


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False, size_average=None,  # noqa: A002
                     eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """``exp(input) - target·input`` (``log_input``) or ``input - target·log(input + eps)``, plus
    Stirling's term ``t·log t - t + 0.5·log(2πt)`` for targets > 1 when ``full``."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(size_average, reduce, reduction)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = pointwise.sub(pointwise.exp(input), pointwise.mul(target, input))
    else:
        loss = pointwise.sub(input, pointwise.mul(target, pointwise.log(_add_scalar(input, eps))))
    if full:
        t = target
        stirling = pointwise.add(pointwise.sub(pointwise.mul(t, pointwise.log(t)), t),
                                 pointwise.mul(pointwise.log(pointwise.mul(t, 2 * math.pi)), 0.5))
        loss = pointwise.add(loss, pointwise.masked_fill(stirling, pointwise.le(t, 1), 0))
    return _apply_reduction(loss, reduction)


def _check_class_target(target) -> None:
    if target._data.dtype != np.int64:
        raise RuntimeError(
            f"expected scalar type Long but found {legacy_type_name(target._data.dtype)}"
        )


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,  # noqa: A002
                      size_average=None, reduce=None, reduction: str = "mean"):
    """Multi-class hinge loss: ``Σ_{j≠y} w_y·max(0, margin - x_y + x_j)^p / C`` per sample."""
    how = _reduction(size_average, reduce, reduction)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    x0 = input._data
    if x0.ndim > 2 or (x0.ndim == 2 and x0.shape[1] == 0):
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape_str(x0.shape)}"
        )
    x = x0.reshape(1, -1) if x0.ndim < 2 else x0
    n, c = x.shape
    y = target._data.reshape(-1)
    if y.size != n or target.ndim > 1 or (x0.ndim == 2 and target.ndim != 1):
        raise RuntimeError(
            "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples "
            f"(batch size). Expected target size [{n}], but got {shape_str(target.shape)}. Input has shape "
            f"{shape_str(x0.shape)}."
        )
    _check_class_target(target)
    if y.size and (y.min() < 0 or y.max() >= c):
        raise RuntimeError("target out of range")
    rows = np.arange(n)
    z = margin - x[rows, y][:, None] + x
    active = (z > 0) & (np.arange(c)[None, :] != y[:, None])
    w = weight._data[y][:, None] if weight is not None else np.ones((n, 1), x.dtype)
    per = (np.where(active, z if p == 1 else z * z, 0) * w).sum(1) / c
    per = per.astype(x.dtype, copy=False)
    out = per.reshape(target.shape)
    out = _reduce(out, how)

    def backward(g):
        gn = np.asarray(_expand_grad(g, (n,), how, n)).reshape(n)
        dz = np.where(active, 1.0 if p == 1 else 2 * z, 0) * w / c * gn[:, None]
        gx = dz.copy()
        gx[rows, y] -= dz.sum(1)
        return (gx.reshape(x0.shape).astype(g.dtype, copy=False),)

    return result(out, "MultiMarginLossBackward0", (input,), backward, saved=(input,))


def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):  # noqa: A002
    """``Σ_{j∈targets} Σ_{i∉targets} max(0, 1 - (x_j - x_i)) / C`` per sample; each row of
    ``target`` lists class indices, ended by the first ``-1``."""
    how = _reduction(size_average, reduce, reduction)
    x0, y0 = input._data, target._data
    if x0.ndim > 2 or (x0.ndim == 2 and x0.shape[1] == 0):
        raise RuntimeError(
            f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: {shape_str(x0.shape)}"
        )
    if y0.shape != x0.shape:
        raise RuntimeError(
            f"inconsistent target size: {shape_str(y0.shape)} for input of size: {shape_str(x0.shape)}"
        )
    _check_class_target(target)
    x = x0.reshape(1, -1) if x0.ndim < 2 else x0
    y = y0.reshape(x.shape)
    n, c = x.shape
    valid = np.cumprod(y != -1, axis=1).astype(bool)  # the prefix before the first -1
    if np.any(valid & ((y < 0) | (y >= c))):
        raise RuntimeError("argument #2 'target' is out of range")
    ys = np.where(valid, y, 0)
    rows = np.arange(n)[:, None]
    is_target = np.zeros((n, c), bool)
    is_target[np.broadcast_to(rows, ys.shape)[valid], ys[valid]] = True
    xt = x[rows, ys]  # (n, k)
    z = 1 - xt[:, :, None] + x[:, None, :]  # (n, k, c)
    active = (z > 0) & valid[:, :, None] & ~is_target[:, None, :]
    per = (np.where(active, z, 0).sum((1, 2)) / c).astype(x.dtype, copy=False)
    out = _reduce(per.reshape(x0.shape[:-1]) if x0.ndim == 2 else per.reshape(()), how)

    def backward(g):
        gn = np.asarray(_expand_grad(g, (n,), how, n)).reshape(n)
        dz = active * (gn[:, None, None] / c)
        gx = dz.sum(1)
        np.add.at(gx, (np.broadcast_to(rows, ys.shape), ys), -dz.sum(2))
        return (gx.reshape(x0.shape).astype(g.dtype, copy=False),)

    return result(out, "MultilabelMarginLossBackward0", (input,), backward, saved=(input,))


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin: float = 1.0,
                                      swap: bool = False, reduction: str = "mean"):
    """``triplet_margin_loss`` with any ``distance_function`` (default ``pairwise_distance``)."""
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    a_dim, p_dim, n_dim = anchor.ndim, positive.ndim, negative.ndim
    if not a_dim == p_dim == n_dim:
        raise RuntimeError(
            "The anchor, positive, and negative tensors are expected to have the same number of dimensions, "
            f"but got: anchor {a_dim}D, positive {p_dim}D, and negative {n_dim}D inputs"
        )
    dist = distance_function if distance_function is not None else pairwise_distance
    dist_pos, dist_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        dist_neg = pointwise.minimum(dist_neg, dist(positive, negative))
    loss = _clamp_min(pointwise.sub(pointwise.add(dist_pos, margin), dist_neg), 0)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _apply_reduction(loss, reduction)
