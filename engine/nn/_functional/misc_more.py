"""rms_norm, bilinear, gumbel_softmax and the remaining dropouts (dropout1d, dropout3d,
alpha_dropout, feature_alpha_dropout), written as torch composes them so the graphs match
(``MulBackward0`` for rms_norm, ``AddBackward0``/``ViewBackward0`` for bilinear, ...)."""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.shape as shape_ops

from ... import _random
from ..._ops._core import result, wrap_dim
from ..._tensor import Tensor
from ._utils import shape_str
from .dropout import _apply, _check_p, _mask
from .loss import _add_scalar


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):  # noqa: A002
    """``x / sqrt(mean(x², last dims) + eps)`` (times ``weight``); ``eps`` defaults to the
    dtype's machine epsilon, as in torch."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or input.ndim < k:
        raise RuntimeError(
            f"Given normalized_shape={shape_str(shape)}, expected input with shape [*"
            f"{', '.join(str(s) for s in shape)}], but got input of size{shape_str(input.shape)}"
        )
    eps_val = float(np.finfo(input._data.dtype).eps) if eps is None else float(eps)
    dims = list(range(input.ndim - k, input.ndim))
    ms = red.mean(pointwise.pow(input, 2), dims, keepdim=True)
    out = pointwise.mul(input, pointwise.rsqrt(_add_scalar(ms, eps_val)))
    return out if weight is None else pointwise.mul(out, weight)


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


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10, dim: int = -1):
    """A sample from the Gumbel-softmax distribution: ``softmax((logits + g) / tau)`` with
    ``g ~ Gumbel(0, 1)``; ``hard`` returns the one-hot of the sample's argmax with the soft
    sample's gradient (straight-through: ``y_hard - y_soft.detach() + y_soft``)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    x = logits._data
    u = _random.uniform_array(x.shape, 0.0, 1.0, np.float64)
    gumbels = Tensor._wrap((-np.log(-np.log1p(-u))).astype(x.dtype))  # -log(Exp(1))
    y_soft = red.softmax(pointwise.div(pointwise.add(logits, gumbels), tau), dim)
    if not hard:
        return y_soft
    d = wrap_dim(dim, x.ndim)
    hot = np.zeros_like(x)
    np.put_along_axis(hot, np.expand_dims(y_soft._data.argmax(axis=d), d), 1.0, axis=d)
    return pointwise.add(pointwise.sub(Tensor._wrap(hot), y_soft.detach()), y_soft)


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zero whole channels of (N, C, L) or (C, L) input with probability ``p``, scaling the rest
    by ``1/(1-p)``."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D input. Note that dropout1d exists "
            "to provide channel-wise dropout on inputs with 1 spatial dimension, a channel dimension, and an "
            "optional batch dimension (i.e. 2D or 3D inputs)."
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 3)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zero whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p``."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is deprecated and will result in "
            "an error in a future release. To retain the behavior and silence this warning, please use dropout "
            "instead. Note that dropout3d exists to provide channel-wise dropout on inputs with 3 spatial "
            "dimensions, a channel dimension, and an optional batch dimension (i.e. 4D or 5D inputs).",
            stacklevel=2,
        )
    return _feature_dropout(input, p, training, inplace, batched=input.ndim == 5)


def _feature_dropout(input, p: float, training: bool, inplace: bool, batched: bool):  # noqa: A002
    x = input if batched else shape_ops.unsqueeze(input, 0)
    if training and p != 0.0 and x.numel() != 0:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        shape = tuple(x.shape[:2]) + (1,) * (x.ndim - 2)
        x = _apply(x, _mask(shape, p, x._data.dtype), inplace and batched)
    return x if batched else shape_ops.squeeze(x, 0)


_ALPHA = 1.7580993408473766  # -SELU's scale·alpha: the value a dropped unit takes


def _alpha(input, p: float, training: bool, feature: bool):  # noqa: A002
    """torch's alpha dropout: dropped units take ``-alpha`` (SELU's saturation), then an affine
    map ``a·x + b`` restores zero mean and unit variance: ``input * noise + b`` (AddBackward0)."""
    _check_p(p)
    if p == 0 or not training or input.numel() == 0:
        return input
    x = input._data
    if p == 1:
        return pointwise.mul(input, Tensor._wrap(np.zeros((), x.dtype)))
    shape = (tuple(x.shape[:2]) + (1,) * (x.ndim - 2)) if feature else x.shape
    if feature and x.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    keep = (_random.uniform_array(shape, 0.0, 1.0, np.float32) >= p).astype(x.dtype)
    a = 1.0 / math.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (keep - 1) * (_ALPHA * a) + _ALPHA * a * p
    return pointwise.add(pointwise.mul(input, Tensor._wrap((keep * a).astype(x.dtype))),
                         Tensor._wrap(b.astype(x.dtype)))


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):  # noqa: A002
    """Dropout for SELU networks: keeps zero mean and unit variance (``AlphaDropout``)."""
    return _alpha(input, p, training, feature=False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):  # noqa: A002
    """``alpha_dropout`` of whole channels."""
    return _alpha(input, p, training, feature=True)
