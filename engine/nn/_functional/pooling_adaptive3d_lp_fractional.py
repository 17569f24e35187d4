"""adaptive_avg_pool3d, adaptive_max_pool3d, lp_pool1d/2d/3d and fractional_max_pool2d/3d.

Adaptive 3-D pools use torch's windows ``[floor(i·n/o), ceil((i+1)·n/o))`` per dim: the average
is three small matrix products, the max gathers every window (padded to equal length by
repeating its last element, which changes neither its maximum nor which comes first). LP pools
are torch's own composition of ``pow``, ``avg_pool`` and ``sign``/``relu``. Fractional max pools
draw one window start sequence per plane and dim from ``_random_samples`` (torch's
``generate_intervals``, in the input's dtype so the starts match torch's bit for bit).
"""

from __future__ import annotations

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction

from ... import _creation
from ..._ops._core import multi_result, result
from ._utils import ntuple, shape_str
from .activation import relu
from .pooling import _window_index, _window_matrix, avg_pool1d, avg_pool2d, max_pool1d, max_pool2d
from .pooling3d import avg_pool3d, max_pool3d

# --- adaptive 3-D pools ------------------------------------------------------------------------


def _adaptive3d_size(output_size, x: np.ndarray, fname: str) -> tuple[int, int, int]:
    if isinstance(output_size, int | np.integer):
        size = [int(output_size)] * 3
    else:
        size = list(output_size)
        if len(size) != 3:
            raise RuntimeError(f"{fname}: internal error: output_size.size() must be 3")
    if x.ndim not in (4, 5):
        colon = ":" if fname == "adaptive_max_pool3d" else ""  # torch's two wordings
        raise RuntimeError(f"{fname}(): Expected 4D or 5D tensor, but got{colon} {shape_str(x.shape)}")
    for dim in range(1, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(f"{fname}(): Expected input to have non-zero size for non-batch dimensions, but "
                               f"input has sizes {shape_str(x.shape)} with dimension {dim} being empty")
    out = [x.shape[-3 + i] if v is None else int(v) for i, v in enumerate(size)]
    return out[0], out[1], out[2]


def adaptive_avg_pool3d(input, output_size):  # noqa: A002
    """Average of (N, C, D, H, W) or (C, D, H, W) over adaptive windows to ``output_size``
    (None keeps that dim); (1, 1, 1) is a ``mean``, as torch records it."""
    x = input._data
    size = _adaptive3d_size(output_size, x, "adaptive_avg_pool3d")
    if size == (1, 1, 1):
        return reduction.mean(input, dim=(-3, -2, -1), keepdim=True)
    pd, ph, pw = (_window_matrix(x.shape[-3 + i], size[i], x.dtype) for i in range(3))
    y = np.einsum("...dhw,id,jh,kw->...ijk", x, pd, ph, pw, optimize=True)

    def backward(g):
        return (np.einsum("...ijk,id,jh,kw->...dhw", g, pd, ph, pw, optimize=True).astype(g.dtype),)

    return result(y.astype(x.dtype, copy=False), "AdaptiveAvgPool3DBackward0", (input,), backward)


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Max of (N, C, D, H, W) or (C, D, H, W) over adaptive windows; with ``return_indices`` also
    the flat ``(d·H + h)·W + w`` index of each (first) maximum."""
    x = input._data
    size = _adaptive3d_size(output_size, x, "adaptive_max_pool3d")
    n = x.shape[-3:]
    wins = [_window_index(n[i], size[i]) for i in range(3)]
    ii = (wins[0][:, :, None, None, None, None], wins[1][None, None, :, :, None, None],
          wins[2][None, None, None, None, :, :])
    lead = x.shape[:-3]
    taps = np.moveaxis(x[(..., *ii)], (-5, -3), (-3, -2)).reshape(lead + size + (-1,))
    pick = taps.argmax(axis=-1)
    y = np.take_along_axis(taps, pick[..., None], axis=-1)[..., 0]
    kh, kw = wins[1].shape[1], wins[2].shape[1]
    td, rem = np.divmod(pick, kh * kw)
    th, tw = np.divmod(rem, kw)
    od, oh, ow = np.meshgrid(*[np.arange(o) for o in size], indexing="ij")
    idx = ((wins[0][od, td] * n[1] + wins[1][oh, th]) * n[2] + wins[2][ow, tw]).astype(np.int64)
    backward = _scatter_backward(idx, x.shape, 3)
    y_t, i_t = multi_result((y, idx), "AdaptiveMaxPool3DBackward0", (input,), backward, saved=(input,),
                            differentiable=(True, False))
    return (y_t, i_t) if return_indices else y_t


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """``adaptive_max_pool3d(..., return_indices=True)``."""
    return adaptive_max_pool3d(input, output_size, True)


def _scatter_backward(idx: np.ndarray, x_shape: tuple, spatial: int):
    """The backward of a max pool with flat per-plane ``idx``: each output gradient added at
    the input position its maximum came from (overlapping windows accumulate)."""
    plane = int(np.prod(x_shape[-spatial:], dtype=np.int64))

    def backward(g, _g_idx=None):
        planes = int(np.prod(g.shape[:-spatial], dtype=np.int64))
        flat = (np.arange(planes).reshape(-1, 1) * plane + idx.reshape(planes, -1)).reshape(-1)
        gx = np.bincount(flat, weights=g.reshape(-1), minlength=planes * plane)
        return (gx.astype(g.dtype).reshape(x_shape),)

    return backward


# --- power-average pools: torch's composition ---------------------------------------------------

def _lp_finish(out, norm_type: float, window: int):

    return (pointwise.sign(out) * relu(out.abs())).mul(window).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):  # noqa: A002
    """``(Σ x^p)^(1/p)`` over windows of (N, C, L) or (C, L); ``p = ±inf`` is a max pool of ``|x|``."""
    if norm_type == float("inf"):
        return max_pool1d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool1d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool1d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kernel_size)


def lp_pool2d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):  # noqa: A002
    """``(Σ x^p)^(1/p)`` over windows of (N, C, H, W) or (C, H, W)."""
    kh, kw = ntuple(kernel_size, 2, "kernel_size", "lp_pool2d")
    if norm_type == float("inf"):
        return max_pool2d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool2d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool2d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kh * kw)


def lp_pool3d(input, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):  # noqa: A002
    """``(Σ x^p)^(1/p)`` over windows of (N, C, D, H, W) or (C, D, H, W)."""
    kd, kh, kw = ntuple(kernel_size, 3, "kernel_size", "lp_pool3d")
    if norm_type == float("inf"):
        return max_pool3d(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -max_pool3d(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    out = avg_pool3d(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return _lp_finish(out, norm_type, kd * kh * kw)


# --- fractional max pools ------------------------------------------------------------------------

def _intervals(sample: np.ndarray, n: int, out: int, k: int) -> np.ndarray:
    """torch's ``generate_intervals`` for every plane at once: (..., out) window starts, computed
    in the samples' dtype (torch computes in the input's scalar type)."""
    dt = sample.dtype
    starts = np.empty(sample.shape + (out,), np.int64)
    if out > 1:
        alpha = dt.type(n - k) / dt.type(out - 1)
        i = np.arange(out - 1, dtype=dt)
        first = (sample[..., None] + i) * alpha
        starts[..., :-1] = first.astype(np.int64) - (sample * alpha).astype(np.int64)[..., None]
    starts[..., -1] = n - k
    return starts


def _fractional_sizes(x: np.ndarray, kernel_size, output_size, output_ratio, nd: int, fname: str):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{fname} requires specifying either an output_size or an output_ratio")
    k = ntuple(kernel_size, nd, "kernel_size", fname)
    if output_size is None:
        ratio = (output_ratio,) * nd if isinstance(output_ratio, int | float) else tuple(output_ratio)
        if len(ratio) == 1:
            ratio = ratio * nd
        if len(ratio) > nd:
            raise ValueError(f"{fname} requires output_ratio to either be a single Int or tuple of Ints.")
        output_size = [int(x.shape[-nd + i] * ratio[i]) for i in range(nd)]
    return k, ntuple(output_size, nd, "output_size", fname)


def _fractional_check(x: np.ndarray, samples: np.ndarray, k, out, nd: int, fname: str) -> None:
    if x.ndim not in (nd + 1, nd + 2) or 0 in x.shape[-nd - 1:]:
        raise RuntimeError(f"{fname}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: {shape_str(x.shape)}")
    batch = x.shape[0] if x.ndim == nd + 2 else 1
    if samples.ndim != 3 or samples.shape[2] != nd:
        raise RuntimeError(f"{fname}(): Expected _random_samples to be of shape (N, C, {nd}), but got "
                           f"{shape_str(samples.shape)}")
    if samples.shape[0] < batch:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != x.shape[-nd - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    words = ("time", "height", "width") if nd == 3 else ("height", "width")
    for i in range(nd):
        n = x.shape[-nd + i]
        # the 3-D kernel demands a strictly larger input, the 2-D one allows equality
        too_large = out[i] + k[i] - 1 >= n if nd == 3 else out[i] + k[i] - 1 > n
        if too_large:
            pre = "fractional_max_pool3d_out(): pool" if nd == 3 else "fractional_max_pool2d(): pool"
            raise RuntimeError(f"{pre} {words[i]} {k[i]} too large relative to input {words[i]} {n}")


def _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples,  # noqa: A002
                nd: int, name: str, fname: str):
    x = input._data
    k, out = _fractional_sizes(x, kernel_size, output_size, output_ratio, nd, fname)
    if _random_samples is None:
        batch = 1 if x.ndim == nd + 1 else x.shape[0]
        _random_samples = _creation.rand(batch, x.shape[-nd - 1], nd, dtype=input.dtype)
    samples = _random_samples._data
    _fractional_check(x, samples, k, out, nd, fname)
    lead = x.shape[:-nd]
    batched = x.ndim == nd + 2
    smp = samples[: x.shape[0]] if batched else samples[0]
    # torch's 2-D kernel reads sample 0 for the width and 1 for the height; the 3-D one (T, H, W)
    order = (1, 0) if nd == 2 else (0, 1, 2)
    starts = [_intervals(smp[..., order[i]].astype(x.dtype, copy=False), x.shape[-nd + i], out[i], k[i])
              for i in range(nd)]
    # flat index of every window's first tap, per plane: (lead..., o_0 · o_1 ...)
    sizes = x.shape[-nd:]
    base = np.zeros(lead + tuple(out), np.int64)
    for i, s in enumerate(starts):
        base = base * sizes[i] + s.reshape(lead + (1,) * i + (out[i],) + (1,) * (nd - 1 - i))
    base = base.reshape(lead + (-1,))
    xf = x.reshape(lead + (-1,))
    nan_possible = x.dtype.kind == "f" and bool(np.isnan(x).any())
    best = best_idx = None
    for offs in np.ndindex(*k):  # a loop over kernel offsets, in torch's row-major window order
        shift = int(np.ravel_multi_index(offs, sizes))
        flat = base + shift
        val = np.take_along_axis(xf, flat, axis=-1)
        if best is None:
            best, best_idx = val, flat
            continue
        take = val > best
        if nan_possible:
            take |= np.isnan(val)  # torch: ``val > maxVal || isnan(val)``: the last NaN wins
        best = np.where(take, val, best)
        best_idx = np.where(take, flat, best_idx)
    y = best.reshape(lead + tuple(out))
    idx = best_idx.reshape(lead + tuple(out)).astype(np.int64)
    y_t, i_t = multi_result((y, idx), name, (input,), _scatter_backward(idx, x.shape, nd), saved=(input,),
                            differentiable=(True, False))
    return (y_t, i_t) if return_indices else y_t


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):
    """Max over ``kernel_size`` windows at pseudo-random fractional strides (Graham 2014) of
    (N, C, H, W) or (C, H, W); ``_random_samples`` (N, C, 2) in [0, 1) fixes the strides
    (without it they are drawn with ``rand``, as torch draws them)."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 2,
                       "FractionalMaxPool2DBackward0", "fractional_max_pool2d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                          return_indices: bool = False, _random_samples=None):
    """3-D fractional max pooling of (N, C, D, H, W) or (C, D, H, W); samples (N, C, 3)."""
    return _fractional(input, kernel_size, output_size, output_ratio, return_indices, _random_samples, 3,
                       "FractionalMaxPool3DBackward0", "fractional_max_pool3d")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices: bool = False, _random_samples=None):
    """``fractional_max_pool2d(..., return_indices=True)``."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,  # noqa: A002
                                       return_indices: bool = False, _random_samples=None):
    """``fractional_max_pool3d(..., return_indices=True)``."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True, _random_samples)
