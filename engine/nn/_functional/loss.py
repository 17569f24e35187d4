"""Losses: mse_loss, l1_loss, nll_loss, cross_entropy, binary_cross_entropy(_with_logits); further
down smooth_l1/huber, kl_div, the margin losses, triplet/cosine/hinge embedding losses, gaussian and
poisson NLL.

Fused nodes where torch has one (``MseLossBackward0``, ``NllLossBackward0``,
``NllLoss2DBackward0``, ``BinaryCrossEntropyBackward0``, ``BinaryCrossEntropyWithLogitsBackward0``);
where torch composes (``l1_loss``, label smoothing, probability targets, weighted MSE/L1) the same
small ops are recorded, so the graph matches torch's node for node. ``MulBackward1`` and
``DivBackward1`` (and ``AddBackward1``) are torch's names for a tensor scaled by (or added to) a
number inside C++.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.shape as shape_ops
import engine._ops.special as special

from ..._errstate import quiet
from ..._ops._core import broadcast_error, result
from ..._tensor import Tensor
from ._utils import check_reduction, legacy_type_name, shape_str
from .activation import log_softmax, logsigmoid
from .distance import _clamp_min, pairwise_distance


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
    # rows of class scores: (N, C) as it is, other ranks with the classes moved last
    xc = x if x.ndim == 2 else x.reshape(1, c) if x.ndim == 1 else np.moveaxis(x, 1, -1).reshape(-1, c)
    tf = t.reshape(-1).astype(np.int64, copy=False)
    keep = tf != ignore_index
    bad = keep & ((tf < 0) | (tf >= c))
    if bad.any():
        raise IndexError(f"Target {int(tf[bad][0])} is out of bounds.")
    safe = np.where(keep, tf, 0)
    if weight is None:
        w = keep.astype(x.dtype)  # 1 per counted target, 0 per ignored one
    else:
        w = np.where(keep, weight._data[safe].astype(x.dtype, copy=False), 0).astype(x.dtype, copy=False)
    rows = np.arange(tf.size)
    per = -w * xc[rows, safe]
    total_weight = w.sum()
    if how == "none":
        out = per.reshape(t.shape if x.ndim > 1 else ())
    elif how == "sum":
        out = np.asarray(per.sum(), x.dtype)
    else:
        with quiet():
            out = np.asarray(per.sum() / total_weight, x.dtype)
    x_shape = x.shape

    def backward(g):
        if how == "none":
            coef = -w * g.reshape(-1)
        elif how == "sum":
            coef = -w * g
        else:
            with quiet():
                coef = -w * (g / total_weight)
            if total_weight == 0:  # every target ignored (or weighted 0): torch leaves the ignored
                coef = np.where(keep, coef, 0)  # rows' gradients 0, not 0 * inf = NaN
        gxc = np.zeros(xc.shape, g.dtype)
        gxc[rows, safe] = coef
        if len(x_shape) <= 2:
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
    with quiet():
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
        with quiet():
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
