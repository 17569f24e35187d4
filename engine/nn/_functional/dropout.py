"""dropout, dropout1d/2d/3d, alpha_dropout and feature_alpha_dropout:
multiply by a scaled Bernoulli mask (``MulBackward0``, as torch records).

Elements (or, for dropout2d, whole channels) are kept with probability ``1 - p`` and scaled by
``1 / (1 - p)`` so the expectation is unchanged. Outside training, or with ``p == 0``, the input
itself is returned.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.shape as shape_ops

from ... import _random
from ..._tensor import Tensor


def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _mask(shape: tuple, p: float, dtype: np.dtype) -> np.ndarray:
    if p == 1.0:
        return np.zeros(shape, dtype)
    keep = _random.uniform_array(shape, 0.0, 1.0, np.float32) >= p
    return np.multiply(keep, 1.0 / (1.0 - p), dtype=dtype)


def _apply(input, mask: np.ndarray, inplace: bool):  # noqa: A002
    m = Tensor._wrap(mask)
    return input.mul_(m) if inplace else pointwise.mul(input, m)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)``."""
    _check_p(p)
    if not training or p == 0.0 or input.numel() == 0:
        return input
    return _apply(input, _mask(input.shape, p, input._data.dtype), inplace)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):  # noqa: A002
    """Zero whole channels (``input[n, c]``) with probability ``p``; (N, C, H, W) or (C, H, W)
    input. As in torch, a 3-D input is treated as (N, C, L), with torch's warnings."""
    _check_p(p)
    ndim = input.ndim
    if ndim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {ndim}-D input to dropout2d, which is deprecated and will result in "
            "an error in a future release. To retain the behavior and silence this warning, please use "
            "dropout instead. Note that dropout2d exists to provide channel-wise dropout on inputs with "
            "2 spatial dimensions, a channel dimension, and an optional batch dimension (i.e. 3D or 4D "
            "inputs).",
            stacklevel=2,
        )
    if ndim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout "
            "behavior is desired - input is interpreted as shape (N, C, L), where C is the channel "
            "dim. This behavior will change in a future release to interpret the input as one without "
            "a batch dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
            "behavior, please switch to using dropout1d instead.",
            stacklevel=2,
        )
    if ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    shape = tuple(input.shape[:2]) + (1,) * (ndim - 2)
    return _apply(input, _mask(shape, p, input._data.dtype), inplace)


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
