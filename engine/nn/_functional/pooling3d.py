"""max_pool3d, avg_pool3d (one node each: ``MaxPool3DWithIndicesBackward0``, ``AvgPool3DBackward0``)
and adaptive_max_pool1d (the 2-D op over an inserted height-1 dim, as torch records it).

A 3-D pool gathers every window of the (padded) input with one fancy index, shape
``(..., oD, kD, oH, kH, oW, kW)``: max takes the first maximum in window order (torch's choice),
average divides the window sums by torch's per-window divisor, which is a product of one count
per dim. Both backwards scatter through the same index with ``bincount``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._ops._core import multi_result, result
from ._utils import ntuple
from .pooling import _DIMS_MSG, _as_2d, _pool_out, _single, adaptive_max_pool2d


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Adaptive max pooling of (N, C, L) or (C, L) to ``output_size`` positions; indices are
    positions along L."""
    size = _single(output_size, "output_size", "adaptive_max_pool1d")
    x2 = _as_2d(input, "adaptive_max_pool1d", _DIMS_MSG)
    out, idx = adaptive_max_pool2d(x2, (1, size), True)
    return (out.squeeze(-2), idx.squeeze(-2)) if return_indices else out.squeeze(-2)


def _geometry3d(input, kernel_size, stride, padding, dilation, ceil_mode: bool, fname: str):  # noqa: A002
    x = input._data
    if x.ndim not in (4, 5) or 0 in x.shape[-4:]:
        raise RuntimeError("non-empty 4D or 5D (batch mode) tensor expected for input")
    k = ntuple(kernel_size, 3, "kernel_size", fname)
    no_stride = stride is None or (isinstance(stride, Sequence) and len(stride) == 0)
    s = k if no_stride else ntuple(stride, 3, "stride", fname)
    p = ntuple(padding, 3, "padding", fname)
    d = ntuple(dilation, 3, "dilation", fname)
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={pp}, "
                               f"kernel_size={kk} and dilation={dd}")
    n = x.shape[-3:]
    out = tuple(_pool_out(n[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3))
    return x, k, s, p, d, n, out


def _window_index(k: int, s: int, d: int, out: int) -> np.ndarray:
    """(out, k) positions in the padded input of each window's taps."""
    return (np.arange(out) * s)[:, None] + np.arange(k) * d


def _gather(x: np.ndarray, k, s, p, d, n, out, fill: float):
    """The padded input (right-padded further for ceil_mode's last windows) and the windows."""
    idx = [_window_index(k[i], s[i], d[i], out[i]) for i in range(3)]
    need = [max(int(idx[i].max()) + 1 if out[i] else 0, n[i] + 2 * p[i]) for i in range(3)]
    pads = [(0, 0)] * (x.ndim - 3) + [(p[i], need[i] - n[i] - p[i]) for i in range(3)]
    xp = np.pad(x, pads, constant_values=fill)
    ii = (idx[0][:, :, None, None, None, None], idx[1][None, None, :, :, None, None],
          idx[2][None, None, None, None, :, :])
    return xp, idx, ii, xp[(..., *ii)]


def _scatter(g_win: np.ndarray, xp_shape: tuple, ii, lead: tuple) -> np.ndarray:
    """The adjoint of ``_gather``: add each window tap's gradient back at its padded position."""
    sp = xp_shape[-3:]
    flat = ((ii[0] * sp[1] + ii[1]) * sp[2] + ii[2])
    planes = int(np.prod(lead, dtype=np.int64))
    size = sp[0] * sp[1] * sp[2]
    full = (np.arange(planes).reshape((-1,) + (1,) * 6) * size + flat).reshape(-1)
    gx = np.bincount(full, weights=np.broadcast_to(g_win, lead + flat.shape).reshape(-1),
                     minlength=planes * size)
    return gx.reshape(lead + sp)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,  # noqa: A002
               return_indices: bool = False):
    """Max over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) input; with
    ``return_indices`` also the flat ``(d·H + h)·W + w`` index of each (first) maximum."""
    x, k, s, p, d, n, out = _geometry3d(input, kernel_size, stride, padding, dilation, ceil_mode, "max_pool3d")
    if min(out) < 1:
        raise RuntimeError(f"Given input size: ({'x'.join(str(v) for v in x.shape[-4:])}). Calculated output "
                           f"size: ({x.shape[-4]}x{'x'.join(str(v) for v in out)}). Output size is too small")
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp, idx, ii, win = _gather(x, k, s, p, d, n, out, fill)
    lead = x.shape[:-3]
    # (..., oD, kD, oH, kH, oW, kW) -> (..., oD, oH, oW, kD·kH·kW), taps in row-major window order
    taps = np.moveaxis(win, (-5, -3), (-3, -2)).reshape(lead + tuple(out) + (-1,))
    pick = taps.argmax(axis=-1)
    y = np.take_along_axis(taps, pick[..., None], axis=-1)[..., 0]
    kd, rem = np.divmod(pick, k[1] * k[2])
    kh, kw = np.divmod(rem, k[2])
    od, oh, ow = np.meshgrid(*[np.arange(o) for o in out], indexing="ij")
    pd_, ph, pw = idx[0][od, kd], idx[1][oh, kh], idx[2][ow, kw]  # padded positions of the maxima
    indices = (((pd_ - p[0]) * n[1] + (ph - p[1])) * n[2] + (pw - p[2])).astype(np.int64)
    x_shape = x.shape

    def backward(g, _g_idx=None):
        planes = int(np.prod(lead, dtype=np.int64))
        size = n[0] * n[1] * n[2]
        flat = (np.arange(planes).reshape(-1, 1) * size + indices.reshape(planes, -1)).reshape(-1)
        gx = np.bincount(flat, weights=g.reshape(-1), minlength=planes * size)
        return (gx.astype(g.dtype).reshape(x_shape),)

    y_t, i_t = multi_result((y.astype(x.dtype, copy=False), indices), "MaxPool3DWithIndicesBackward0", (input,),
                            backward, saved=(input,), differentiable=(True, False))
    return (y_t, i_t) if return_indices else y_t


def _divisor(n: int, k: int, s: int, p: int, out: int, count_include_pad: bool) -> np.ndarray:
    """torch's per-window divisor along one dim (the 3-D divisor is the product of three)."""
    start = np.arange(out) * s - p
    end = np.minimum(start + k, n + p)
    if count_include_pad:
        return (end - start).astype(np.float64)
    return (np.minimum(end, n) - np.maximum(start, 0)).astype(np.float64)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True, divisor_override=None):
    """Average over ``kernel_size`` windows of (N, C, D, H, W) or (C, D, H, W) input, with
    torch's divisor (window size inside the padded input, or inside the input when not
    ``count_include_pad``; ``divisor_override`` replaces both)."""
    x, k, s, p, d, n, out = _geometry3d(input, kernel_size, stride, padding, 1, ceil_mode, "avg_pool3d")
    if any(n[i] + 2 * p[i] < k[i] for i in range(3)):
        raise RuntimeError(f"input image (T: {n[0]} H: {n[1]} W: {n[2]}) smaller than kernel size "
                           f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xp, idx, ii, win = _gather(x, k, s, p, d, n, out, 0)
    if divisor_override is not None:
        div = np.full(tuple(out), float(divisor_override))
    else:
        divs = [_divisor(n[i], k[i], s[i], p[i], out[i], count_include_pad) for i in range(3)]
        div = divs[0][:, None, None] * divs[1][None, :, None] * divs[2][None, None, :]
    y = (win.sum(axis=(-5, -3, -1)) / div).astype(x.dtype)
    lead, xp_shape, pads = x.shape[:-3], xp.shape, p

    def backward(g):
        gw = (g / div.astype(g.dtype))[..., :, None, :, None, :, None]
        gp = _scatter(gw, xp_shape, ii, lead)
        gx = gp[..., pads[0]:pads[0] + n[0], pads[1]:pads[1] + n[1], pads[2]:pads[2] + n[2]]
        return (np.ascontiguousarray(gx).astype(g.dtype),)

    return result(y, "AvgPool3DBackward0", (input,), backward)

