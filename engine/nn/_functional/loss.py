"""Losses: mse_loss, l1_loss, nll_loss, cross_entropy, binary_cross_entropy(_with_logits).

Fused nodes where torch has one (``MseLossBackward0``, ``NllLossBackward0``,
``NllLoss2DBackward0``, ``BinaryCrossEntropyBackward0``, ``BinaryCrossEntropyWithLogitsBackward0``);
where torch composes (``l1_loss``, label smoothing, probability targets, weighted MSE/L1) the same
small ops are recorded, so the graph matches torch's node for node. ``MulBackward1`` and
``DivBackward1`` (and ``AddBackward1``) are torch's names for a tensor scaled by (or added to) a
number inside C++.
"""

from __future__ import annotations

import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.shape as shape_ops

from ..._ops._core import broadcast_error, result
from ..._tensor import Tensor
from ._utils import check_reduction, legacy_type_name, shape_str
from .activation import log_softmax


def legacy_get_string(size_average: bool | None, reduce: bool | None, emit_warning: bool = True) -> str:
    """The reduction the deprecated ``size_average``/``reduce`` pair stands for (torch's rule)."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    ret = "mean" if size_average and reduce else "sum" if reduce else "none"
    if emit_warning:
        warnings.warn(
            f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.",
            stacklevel=3,
        )
    return ret


def _reduction(size_average, reduce, reduction_: str) -> str:
    if size_average is not None or reduce is not None:
        return legacy_get_string(size_average, reduce)
    return check_reduction(reduction_)


def _scaled(t, factor: float, name: str = "MulBackward1"):
    """``t * factor`` (or ``t / factor`` for ``DivBackward1``) recorded as one scalar op."""
    f = 1.0 / factor if name == "DivBackward1" else factor
    return result(t._data * np.asarray(f, t._data.dtype), name, (t,), lambda g: (g * np.asarray(f, g.dtype),))


def _add_scalar(t, value: float, name: str = "AddBackward1"):
    """``t + value`` as C++ records it (``AddBackward1``; ``SubBackward1`` for ``t - (-value)``)."""
    return result(t._data + np.asarray(value, t._data.dtype), name, (t,), lambda g: (g,))


def _reduce(loss: np.ndarray, how: str) -> np.ndarray:
    if how == "none":
        return loss
    return np.asarray(loss.mean() if how == "mean" else loss.sum(), loss.dtype)


def _expand_grad(g: np.ndarray, shape: tuple, how: str, n: int) -> np.ndarray:
    """The gradient of a reduction, as an array of the unreduced ``shape``."""
    if how == "none":
        return g
    return np.broadcast_to(g / np.asarray(n, g.dtype) if how == "mean" else g, shape)


def _warn_size(input, target) -> None:  # noqa: A002
    if target.shape != input.shape:
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the "
            "same size.",
            stacklevel=3,
        )


def _broadcast_pair(input, target):  # noqa: A002
    """torch.broadcast_tensors: expand (``ExpandBackward0``) only a tensor whose shape changes."""
    try:
        shape = np.broadcast_shapes(input.shape, target.shape)
    except ValueError:
        raise broadcast_error(tuple(input.shape), tuple(target.shape)) from None
    if tuple(input.shape) != shape:
        input = shape_ops.expand(input, shape)
    if tuple(target.shape) != shape:
        target = shape_ops.expand(target, shape)
    return input, target


def _weighted(errors, weight, input, how: str):  # noqa: A002
    """torch's Python-side weighted MSE/L1: ``errors * weight``, then sum / Σweight."""
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError("Weights and input must have the same size.")
    weighted = pointwise.mul(errors, weight)
    if how == "none":
        return weighted
    total = red.sum(weighted)
    return total if how == "sum" else pointwise.div(total, red.sum(weight))


# --- regression losses ------------------------------------------------------------------------

def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
             weight=None):
    """Mean squared error (``'mean'``), its sum (``'sum'``) or the per-element squares (``'none'``)."""
    _warn_size(input, target)
    how = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    if weight is not None:
        return _weighted(pointwise.pow(pointwise.sub(input, target), 2), weight, input, how)
    x, t = input._data, target._data
    diff = x - t
    out = _reduce(diff * diff, how)
    n = diff.size
    ra, rb = input._requires_grad, target._requires_grad

    def backward(g):
        gd = 2 * diff * _expand_grad(g, diff.shape, how, n)
        return (gd if ra else None, -gd if rb else None)

    return result(out, "MseLossBackward0", (input, target), backward, saved=(input, target))


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",  # noqa: A002
            weight=None):
    """Mean absolute error; recorded as torch composes it: ``(input - target).abs()`` then mean/sum."""
    _warn_size(input, target)
    how = _reduction(size_average, reduce, reduction)
    input, target = _broadcast_pair(input, target)
    errors = pointwise.abs(pointwise.sub(input, target))
    if weight is not None:
        return _weighted(errors, weight, input, how)
    if how == "none":
        return errors
    return red.mean(errors) if how == "mean" else red.sum(errors)


# --- classification: nll_loss / cross_entropy -------------------------------------------------

def _check_target_dtype(target) -> None:
    if target._data.dtype not in (np.int64, np.uint8):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {legacy_type_name(target._data.dtype)}"
        )


def _check_weight(weight, c: int, prefix: str = "") -> None:
    if weight is not None and weight._data.size != c:
        raise RuntimeError(
            f"{prefix}weight tensor should be defined either for all {c} classes or no classes but got "
            f"weight tensor of shape: {shape_str(weight.shape)}"
        )


def _no_grad_arg(t, arg: str, fname: str) -> None:
    if t is not None and t._requires_grad:
        raise RuntimeError(
            f"The function '{fname}' is not differentiable with respect to argument '{arg}'. This input "
            "cannot have requires_grad True."
        )


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,  # noqa: A002
             reduce=None, reduction: str = "mean"):
    """Negative log-likelihood of class indices ``target`` under log-probabilities ``input``
    ((N, C), (C,) or (N, C, d1, ...)). ``'mean'`` divides by the summed weights of the
    non-ignored targets (NaN when there are none, as in torch)."""
    how = _reduction(size_average, reduce, reduction)
    x = input._data
    if x.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {x.ndim})")
    if x.ndim != 1 and x.shape[0] != target.shape[0]:
        raise ValueError(
            f"Expected input batch_size ({x.shape[0]}) to match target batch_size ({target.shape[0]})."
        )
    _no_grad_arg(weight, "weight", "nll_loss_forward")
    if x.ndim <= 2:
        return _nll(input, target, weight, ignore_index, how, "NllLossBackward0")
    n, c = x.shape[0], x.shape[1]
    if tuple(target.shape[1:]) != tuple(x.shape[2:]):
        if x.ndim == 4:
            raise RuntimeError(
                "only batches of spatial targets supported (3D tensors) but got targets of dimension: "
                f"{target.ndim}"
            )
        raise RuntimeError(f"Expected target size {shape_str((n,) + x.shape[2:])}, got {shape_str(target.shape)}")
    if x.ndim == 4:
        return _nll(input, target, weight, ignore_index, how, "NllLoss2DBackward0")
    # torch views other ranks as (N, C, 1, L) and the per-element loss back (ViewBackward0 both ways).
    flat = shape_ops.view(shape_ops.contiguous(input), n, c, 1, -1)
    out = _nll(flat, Tensor._wrap(target._data.reshape(n, 1, -1)), weight, ignore_index, how,
               "NllLoss2DBackward0")
    return shape_ops.view(out, (n,) + tuple(x.shape[2:])) if how == "none" else out


def _nll(input, target, weight, ignore_index: int, how: str, name: str):  # noqa: A002
    """The fused op: classes on dim 1 (dim 0 for a 1-D input). Checks in torch's order: target
    rank, weight size, then the target's dtype and values."""
    x, t = input._data, target._data
    if x.ndim == 1:
        if t.ndim > 1 or (t.ndim == 1 and t.shape[0] != 1):
            raise ValueError(f"For 1D input, 1D target must have size 1, but got target size: {t.shape[0]}")
    elif x.ndim == 2 and t.ndim != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    c = x.shape[0] if x.ndim == 1 else x.shape[1]
    _check_weight(weight, c)
    _check_target_dtype(target)
    xc = x.reshape(1, c) if x.ndim == 1 else np.moveaxis(x, 1, -1).reshape(-1, c)
    tf = t.reshape(-1).astype(np.int64, copy=False)
    keep = tf != ignore_index
    bad = keep & ((tf < 0) | (tf >= c))
    if bad.any():
        raise IndexError(f"Target {int(tf[bad][0])} is out of bounds.")
    safe = np.where(keep, tf, 0)
    w = weight._data[safe].astype(x.dtype, copy=False) if weight is not None else np.ones(tf.shape, x.dtype)
    w = np.where(keep, w, 0).astype(x.dtype, copy=False)
    rows = np.arange(tf.size)
    per = -w * xc[rows, safe]
    total_weight = w.sum()
    if how == "none":
        out = per.reshape(t.shape if x.ndim > 1 else ())
    elif how == "sum":
        out = np.asarray(per.sum(), x.dtype)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.asarray(per.sum() / total_weight, x.dtype)
    x_shape = x.shape

    def backward(g):
        if how == "none":
            coef = -w * g.reshape(-1)
        elif how == "sum":
            coef = -w * g
        else:
            with np.errstate(invalid="ignore", divide="ignore"):
                coef = -w * (g / total_weight)
            if total_weight == 0:  # every target ignored (or weighted 0): torch leaves the ignored
                coef = np.where(keep, coef, 0)  # rows' gradients 0, not 0 * inf = NaN
        gxc = np.zeros(xc.shape, g.dtype)
        gxc[rows, safe] = coef
        if len(x_shape) == 1:
            return (gxc.reshape(x_shape),)
        moved = gxc.reshape((x_shape[0],) + x_shape[2:] + (c,))
        return (np.ascontiguousarray(np.moveaxis(moved, -1, 1)),)

    return result(out, name, (input,), backward, saved=(target,) if weight is None else (target, weight))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,  # noqa: A002
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
    """``nll_loss(log_softmax(input, class_dim), target)`` for class indices; for float targets of
    the input's shape, the cross entropy against those probabilities. ``label_smoothing`` mixes
    the target with the uniform distribution, recorded with the ops torch uses."""
    how = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, class_dim)
    if target._data.dtype.kind == "f" and tuple(target.shape) == tuple(input.shape):
        if ignore_index >= 0:
            raise RuntimeError("ignore_index is not supported for floating point target")
        return _cross_entropy_probs(logp, target, weight, how, label_smoothing, class_dim)
    if label_smoothing > 0.0:
        return _cross_entropy_smoothed(logp, target, weight, how, ignore_index, label_smoothing, class_dim)
    return nll_loss(logp, target, weight, None, ignore_index, None, how)


def _class_view(weight, ndim: int, class_dim: int):
    shape = [1] * ndim
    shape[class_dim] = weight.shape[0]
    return shape_ops.view(weight, *shape)


def _cross_entropy_smoothed(logp, target, weight, how: str, ignore_index: int, ls: float, class_dim: int):
    """torch's ``cross_entropy_loss_label_smoothing``, op for op."""
    n_classes = logp.shape[class_dim]
    nll = nll_loss(logp, target, weight, None, ignore_index, None, how)
    ignore = target._data == ignore_index
    scaled = pointwise.mul(logp, _class_view(weight, logp.ndim, class_dim)) if weight is not None else logp
    smooth = pointwise.neg(red.sum(scaled, class_dim))
    smooth.masked_fill_(Tensor._wrap(ignore), 0.0)
    if how == "mean":
        if weight is not None:
            denom = weight._data[target._data[~ignore].reshape(-1)].sum()
        else:
            denom = (~ignore).sum()
        with np.errstate(invalid="ignore", divide="ignore"):  # all targets ignored: NaN, as in torch
            ret = pointwise.div(red.sum(smooth), Tensor._wrap(np.asarray(denom, logp._data.dtype)))
    elif how == "sum":
        ret = red.sum(smooth)
    else:
        ret = smooth
    return pointwise.add(_scaled(nll, 1.0 - ls), _scaled(ret, ls / n_classes))


def _cross_entropy_probs(logp, target, weight, how: str, ls: float, class_dim: int):
    """torch's ``cross_entropy_loss_prob_target``, op for op."""
    n_classes = logp.shape[class_dim]
    if weight is not None and (weight.ndim != 1 or weight.numel() != n_classes):
        raise RuntimeError(
            f"cross_entropy: weight tensor should be defined either for all {n_classes} classes or no "
            f"classes but got weight tensor of shape: {shape_str(weight.shape)}"
        )
    if ls > 0.0:
        target = _add_scalar(_scaled(target, 1.0 - ls), ls / n_classes)
    prod = pointwise.mul(logp, target)
    if weight is not None:
        prod = pointwise.mul(prod, _class_view(weight, logp.ndim, class_dim))
    if how == "none":
        return pointwise.neg(red.sum(prod, class_dim))
    total = pointwise.neg(red.sum(prod))
    if how == "sum":
        return total
    return _scaled(total, logp.numel() / n_classes if logp.numel() else float("nan"), "DivBackward1")


# --- binary cross entropy ---------------------------------------------------------------------

def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                         reduction: str = "mean"):
    """``-w·(t·log x + (1-t)·log(1-x))`` with the logs clamped at -100, as torch does."""
    how = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}) "
            "is deprecated. Please ensure they have the same size."
        )
    _no_grad_arg(weight, "weight", "binary_cross_entropy")
    x, t = input._data, target._data
    if t.dtype != x.dtype:
        raise RuntimeError(f"Found dtype {legacy_type_name(t.dtype)} but expected {legacy_type_name(x.dtype)}")
    if ((x < 0) | (x > 1)).any():
        raise RuntimeError("all elements of input should be between 0 and 1")
    w = _broadcast_weight(weight, x.shape)
    with np.errstate(divide="ignore"):
        log_x = np.maximum(np.log(x), -100)
        log_1mx = np.maximum(np.log1p(-x), -100)
    loss = -(t * log_x + (1 - t) * log_1mx)
    if w is not None:
        loss = loss * w
    out = _reduce(loss, how)
    n = x.size
    ra, rb = input._requires_grad, target._requires_grad

    def backward(g):
        ge = _expand_grad(g, x.shape, how, n)
        if w is not None:
            ge = ge * w
        gx = ge * (x - t) / np.maximum((1 - x) * x, np.asarray(1e-12, x.dtype)) if ra else None
        with np.errstate(divide="ignore"):
            gt = ge * (np.log1p(-x) - np.log(x)) if rb else None
        return gx, gt

    return result(out.astype(x.dtype, copy=False), "BinaryCrossEntropyBackward0", (input, target), backward,
                  saved=(input, target))


def _broadcast_weight(weight, shape: tuple) -> np.ndarray | None:
    if weight is None:
        return None
    try:
        return np.broadcast_to(weight._data, shape)
    except ValueError:
        raise broadcast_error(shape, tuple(weight.shape)) from None


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,  # noqa: A002
                                     reduction: str = "mean", pos_weight=None):
    """BCE on logits, computed stably: ``(1-t)·x + (1 + (p-1)·t)·softplus(-x)`` times ``weight``,
    where ``p`` is ``pos_weight`` (broadcast over the last dim)."""
    how = _reduction(size_average, reduce, reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size ({input.shape})")
    _no_grad_arg(weight, "weight", "binary_cross_entropy_with_logits")
    _no_grad_arg(pos_weight, "pos_weight", "binary_cross_entropy_with_logits")
    x, t = input._data, target._data
    w = _broadcast_weight(weight, x.shape)
    pw = _broadcast_weight(pos_weight, x.shape)
    softplus_neg = np.log1p(np.exp(-np.abs(x))) + np.maximum(-x, 0)  # log(1 + e^-x), stably
    if pw is not None:
        log_weight = 1 + (pw - 1) * t
        loss = (1 - t) * x + log_weight * softplus_neg
    else:
        log_weight = None
        loss = (1 - t) * x + softplus_neg
    if w is not None:
        loss = loss * w
    out = _reduce(loss.astype(x.dtype, copy=False), how)
    n = x.size
    ra, rb = input._requires_grad, target._requires_grad

    def backward(g):
        ge = _expand_grad(g, x.shape, how, n)
        if w is not None:
            ge = ge * w
        sig_neg = pointwise._sigmoid(-x)  # 1 - sigmoid(x)
        gx = gt = None
        if ra:
            gx = ge * ((1 - t) - (log_weight if log_weight is not None else 1) * sig_neg)
        if rb:
            gt = ge * (-x + (pw - 1) * softplus_neg if pw is not None else -x)
        return gx, gt

    return result(out, "BinaryCrossEntropyWithLogitsBackward0", (input, target), backward,
                  saved=(input, target))

