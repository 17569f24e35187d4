"""batch_norm and layer_norm, each one fused node (``NativeBatchNormBackward0``,
``NativeLayerNormBackward0``) with the closed-form backward; group/instance/local-response norms
and rms_norm composed as torch composes them.

With x̂ = (x - μ)·σ⁻¹ over M reduced elements and ĝ = g·γ, the input gradient in training mode is
``σ⁻¹/M · (M·ĝ - Σĝ - x̂·Σ(ĝ·x̂))``; in evaluation mode the statistics are constants and it is
``ĝ·σ⁻¹``. ``dγ = Σ g·x̂`` and ``dβ = Σ g``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.shape as shape_ops

from ..._ops._core import result
from ..._tensor import Size
from ._utils import shape_str
from .loss import _add_scalar


def _check_param(name: str, t, c: int) -> None:
    if t is not None and t._data.size != c:
        raise RuntimeError(f"{name} should contain {c} elements not {t._data.size}")


def _check_dtypes(x: np.ndarray, params: Sequence) -> None:
    """torch's CPU rule: parameters share the input's dtype (its two wordings)."""
    if any(t is not None and t._data.dtype != x.dtype for t in params):
        if x.dtype == np.float32:
            raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,  # noqa: A002
               momentum: float = 0.1, eps: float = 1e-5):
    """Normalise over every dim but the channel dim 1. In training, uses the batch statistics and,
    when running buffers are given, updates them in place: ``r = (1 - momentum)·r + momentum·s``
    with the unbiased variance (torch's rule; the buffers' versions are left unchanged, as in torch).
    In evaluation, normalises with the running statistics."""
    x = input._data
    if training:
        _verify_batch_size(input.shape)
    if x.ndim < 2 and training:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    c = x.shape[1] if x.ndim > 1 else 0  # torch counts no channels in a 1-D input
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        _check_param(name, t, c)
    _check_dtypes(x, (weight, bias, running_mean, running_var))
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in evaluation mode")

    if x.size == 0:  # torch returns a copy and leaves the running statistics alone
        return shape_ops.clone(input)

    axes = (0,) + tuple(range(2, x.ndim))
    bshape = (1, c) + (1,) * (x.ndim - 2)
    m = x.size // c
    if training:
        mean = x.mean(axis=axes)
        xc = x - mean.reshape(bshape)
        var = _channel_dot(xc, xc) / m
        _update_running(running_mean, running_var, mean, var, m, momentum)
    else:
        mean, var = running_mean._data, running_var._data
        xc = x - mean.reshape(bshape)
    invstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    xhat = xc * invstd.reshape(bshape)
    w = weight._data if weight is not None else None
    out = xhat * w.reshape(bshape) if w is not None else xhat.copy()
    if bias is not None:
        out += bias._data.reshape(bshape)
    need_x = input._requires_grad
    need_w = weight is not None and weight._requires_grad
    need_b = bias is not None and bias._requires_grad

    def backward(g):
        centre = training and need_x  # the batch statistics depend on x: two extra reductions
        proj = _channel_dot(g, xhat) if need_w or centre else None  # Σ g·x̂ per channel
        gsum = g.sum(axis=axes) if need_b or centre else None
        gx = None
        if need_x:
            scale = (invstd if w is None else invstd * w).reshape(bshape)
            if training:
                gx = (g - (gsum / m).reshape(bshape) - xhat * (proj / m).reshape(bshape)) * scale
            else:
                gx = g * scale
        return gx, proj if need_w else None, gsum if need_b else None

    saved = [t for t in (input, weight, running_mean, running_var) if t is not None]
    return result(out, "NativeBatchNormBackward0", (input, weight, bias), backward, saved=saved)


def _channel_dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Σ a·b over every dim but 1, without materialising the product."""
    n, c = a.shape[0], a.shape[1]
    return np.einsum("ijk,ijk->j", a.reshape(n, c, -1), b.reshape(n, c, -1))  # n > 0 here


def _verify_batch_size(size) -> None:
    n = size[0]
    for s in size[2:]:
        n *= s
    if n == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size!r}")


def _update_running(running_mean, running_var, mean: np.ndarray, var: np.ndarray, m: int,
                    momentum: float) -> None:
    if running_mean is not None:
        rm = running_mean._data
        rm *= 1.0 - momentum
        rm += (momentum * mean).astype(rm.dtype, copy=False)
    if running_var is not None:
        rv = running_var._data
        unbiased = var * (m / max(m - 1, 1))
        rv *= 1.0 - momentum
        rv += (momentum * unbiased).astype(rv.dtype, copy=False)


def _mean_kept(x: np.ndarray, axes: tuple[int, ...], n: int) -> np.ndarray:
    """``x.mean(axis=axes, keepdims=True)`` for a float32/float64 ``x``, value for value (the sum
    divided by the count as an integer scalar, as NumPy's mean divides), without NumPy's Python
    wrapper around it: layer_norm takes four means per call."""
    if x.dtype.kind != "f" or x.dtype.itemsize < 4:
        return x.mean(axis=axes, keepdims=True)  # (NumPy sums float16 in float32)
    s = np.add.reduce(x, axis=axes, keepdims=True)
    return np.true_divide(s, np.intp(n), out=s, casting="unsafe")


def layer_norm(input, normalized_shape: int | Sequence[int], weight=None, bias=None,  # noqa: A002
               eps: float = 1e-5):
    """Normalise over the trailing ``normalized_shape`` dims, then scale by ``weight`` and shift by
    ``bias`` (both of shape ``normalized_shape``)."""
    x = input._data
    shape = (int(normalized_shape),) if isinstance(normalized_shape, int | np.integer) \
        else tuple(int(s) for s in normalized_shape)
    _check_layer_norm(x, shape, weight, bias)
    axes = tuple(range(x.ndim - len(shape), x.ndim))
    n = 1
    for s in shape:
        n *= s
    mean = _mean_kept(x, axes, n)
    xc = x - mean
    var = _mean_kept(xc * xc, axes, n)
    invstd = (1.0 / np.sqrt(var + eps)).astype(x.dtype, copy=False)
    xhat = xc * invstd
    w = weight._data if weight is not None else None
    out = xhat * w if w is not None else xhat.copy()
    if bias is not None:
        out += bias._data
    lead = tuple(range(x.ndim - len(shape)))
    need_w = weight is not None and weight._requires_grad
    need_b = bias is not None and bias._requires_grad

    def backward(g):
        gw = (g * xhat).sum(axis=lead) if need_w else None
        gb = g.sum(axis=lead) if need_b else None
        gx = None
        if input._requires_grad:
            gh = g * w if w is not None else g
            gx = (gh - _mean_kept(gh, axes, n) - xhat * _mean_kept(gh * xhat, axes, n)) * invstd
        return gx, gw, gb

    saved = [t for t in (input, weight, bias) if t is not None]
    return result(out, "NativeLayerNormBackward0", (input, weight, bias), backward, saved=saved)


def _check_layer_norm(x: np.ndarray, shape: tuple, weight, bias) -> None:
    if len(shape) == 0:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
            "element, but got normalized_shape = []"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{shape_str(t.shape)} and normalized_shape = {shape_str(shape)}"
            )
    if x.ndim < len(shape) or tuple(x.shape[x.ndim - len(shape):]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={shape_str(shape)}, expected input with shape "
            f"[*, {', '.join(map(str, shape))}], but got input of size{shape_str(x.shape)}"
        )


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):  # noqa: A002
    """Normalise each sample over groups of ``C / num_groups`` channels (and all spatial dims),
    then scale and shift per channel: one ``NativeGroupNormBackward0`` node."""
    x = input._data
    if x.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {x.ndim}")
    n, c = x.shape[:2]
    if c % num_groups:
        raise RuntimeError(
            "Expected number of channels in input to be divisible by num_groups, but got input of shape "
            f"{shape_str(x.shape)} and num_groups={num_groups}"
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.shape[0] != c):
            raise RuntimeError(
                f"Expected {name} to be a vector of size equal to the number of channels in input, but got "
                f"{name} of shape {shape_str(t.shape)} and input of shape {shape_str(x.shape)}"
            )
    grouped = x.reshape(n, num_groups, -1)
    mean = grouped.mean(axis=2, keepdims=True)
    xc = grouped - mean
    invstd = (1.0 / np.sqrt((xc * xc).mean(axis=2, keepdims=True) + eps)).astype(x.dtype, copy=False)
    xhat = (xc * invstd).reshape(x.shape)
    cshape = (1, c) + (1,) * (x.ndim - 2)
    w = weight._data.reshape(cshape) if weight is not None else None
    out = xhat * w if w is not None else xhat.copy()
    if bias is not None:
        out += bias._data.reshape(cshape)
    axes = (0,) + tuple(range(2, x.ndim))
    need_w = weight is not None and weight._requires_grad
    need_b = bias is not None and bias._requires_grad

    def backward(g):
        gw = (g * xhat).sum(axis=axes) if need_w else None
        gb = g.sum(axis=axes) if need_b else None
        gx = None
        if input._requires_grad:
            gh = (g * w if w is not None else g).reshape(n, num_groups, -1)
            xh = xhat.reshape(n, num_groups, -1)
            gx = ((gh - gh.mean(axis=2, keepdims=True) - xh * (gh * xh).mean(axis=2, keepdims=True))
                  * invstd).reshape(x.shape)
        return gx, gw, gb

    saved = [t for t in (input, weight) if t is not None]
    return result(out, "NativeGroupNormBackward0", (input, weight, bias), backward, saved=saved)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,  # noqa: A002
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """Normalise each (sample, channel) over its spatial dims. Computed as torch computes it: the
    input viewed as one sample of N·C channels through ``batch_norm`` (weight, bias and running
    statistics repeated N times), viewed back; the running statistics, when given, become the
    mean of their N updated copies."""
    shape = tuple(input.shape)
    if use_input_stats:
        _verify_spatial_size(shape)
    n, c = shape[:2]
    flat = input.reshape(1, n * c, *shape[2:])
    rep = [None if t is None else t.repeat(n) for t in (weight, bias)]
    stats = [None if t is None else t.detach().repeat(n) for t in (running_mean, running_var)]
    out = batch_norm(flat, stats[0], stats[1], rep[0], rep[1], use_input_stats, momentum, eps)
    for buf, tmp in zip((running_mean, running_var), stats):
        if buf is not None and use_input_stats:
            buf._data[...] = tmp._data.reshape(n, c).mean(axis=0).astype(buf._data.dtype)
    return out.view(*shape)


def _verify_spatial_size(size) -> None:
    n = 1
    for s in size[2:]:
        n *= s
    if n == 1:

        raise ValueError(f"Expected more than 1 spatial element when training, got input size {Size(size)!r}")


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):  # noqa: A002
    """``x / (k + alpha/size · Σ x²)^beta``, the sum over ``size`` neighbouring channels
    (zero-padded), composed from small ops as torch composes it."""
    from .pooling import avg_pool2d  # engine.nn's __init__ (run by its imports) imports this module
    from .sampling import pad  # engine.nn's __init__ (run by its imports) imports this module

    dim = input.ndim
    if dim < 3:
        raise ValueError(
            f"Expected 3D or higher dimensionality                          input (got {dim} dimensions)"
        )
    if input.numel() == 0:
        return input
    div = input.mul(input)
    if dim == 3:
        div = pad(div.unsqueeze(1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1)
    else:  # torch pools a 5-D view with avg_pool3d; a 4-D view with avg_pool2d gives the same sums
        sizes = tuple(input.shape)
        div = pad(div.view(sizes[0], 1, sizes[1], -1), (0, 0, size // 2, (size - 1) // 2))
        div = avg_pool2d(div, (size, 1), stride=1).squeeze(1).view(*sizes)
    div = div.mul(alpha).add(k).pow(beta)
    return input / div


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
