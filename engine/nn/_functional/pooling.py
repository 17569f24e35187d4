"""max_pool2d, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d: one node each, computed from
strided slices; the 1-D pools run the 2-D ops over an inserted height-1 dim, as torch does.

A k×k pool is ``k·k`` strided slices of the (padded) input, each of the output's shape. Max pool
takes their running maximum; its backward gives each slice ``grad * mask``, where the mask marks
the first slice (in row-major window order, as torch picks) that holds the maximum. Average pool
sums the slices and divides by torch's per-window divisor. Adaptive average pooling is two small
matrix products with row-normalised window-membership matrices; adaptive max pooling gathers
each (padded-to-equal-length) window and takes its first maximum.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

import engine._ops.reduction as reduction

from ..._ops._core import multi_result, result
from ._utils import ntuple, shape_str


def _pool_out(n: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """torch's pooling output size (``pooling_output_shape``)."""
    span = n + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= n + p:  # the last window must start inside the input
        out -= 1
    return out


def _check_input(x: np.ndarray) -> None:
    if x.ndim not in (3, 4) or any(n == 0 for n in x.shape[-3:]):
        if x.ndim in (3, 4):
            raise RuntimeError(
                "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, "
                f"but got:{shape_str(x.shape)}"
            )
        raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")


def _geometry(x: np.ndarray, kernel_size, stride, padding, dilation, ceil_mode: bool, fname: str):
    """Normalise the arguments, run torch's checks, return (k, s, p, d, (Ho, Wo))."""
    k = ntuple(kernel_size, 2, "kernel_size", fname)
    s = k if stride is None or (isinstance(stride, Sequence) and len(stride) == 0) \
        else ntuple(stride, 2, "stride", fname)
    p = ntuple(padding, 2, "padding", fname)
    d = ntuple(dilation, 2, "dilation", fname)
    if any(v == 0 for v in s) or any(v <= 0 for v in k):
        raise RuntimeError("stride should not be zero")
    if any(v < 0 for v in s):
        raise RuntimeError(f"stride should be greater than zero, but got dH: {s[0]} dW: {s[1]}")
    if any(v <= 0 for v in d):
        raise RuntimeError(f"dilation should be greater than zero, but got dilationH: {d[0]} dilationW: {d[1]}")
    if any(v < 0 for v in p):
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(p)}")
    for kk, pp, dd in zip(k, p, d):
        if pp > ((kk - 1) * dd + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={pp}, "
                f"kernel_size={kk} and dilation={dd}"
            )
    _check_input(x)
    h, w = x.shape[-2:]
    out = (_pool_out(h, k[0], s[0], p[0], d[0], ceil_mode), _pool_out(w, k[1], s[1], p[1], d[1], ceil_mode))
    if out[0] < 1 or out[1] < 1:
        c = x.shape[-3]
        raise RuntimeError(
            f"Given input size: ({c}x{h}x{w}). Calculated output size: ({c}x{out[0]}x{out[1]}). "
            "Output size is too small"
        )
    return k, s, p, d, out


def _padded(x: np.ndarray, p, k, s, d, out, fill) -> np.ndarray:
    """``x`` padded by ``p`` (and on the bottom/right as far as ceil-mode windows reach)."""
    need = [(o - 1) * ss + dd * (kk - 1) + 1 for o, ss, dd, kk in zip(out, s, d, k)]
    extra = [max(0, nd - n - pp) for nd, n, pp in zip(need, x.shape[-2:], p)]
    if not any(p) and not any(extra):
        return x
    h, w = x.shape[-2:]
    xp = np.full(x.shape[:-2] + (h + p[0] + extra[0], w + p[1] + extra[1]), fill, x.dtype)
    xp[..., p[0]:p[0] + h, p[1]:p[1] + w] = x
    return xp


def _taps(k, s, d, out):
    """(row slice, column slice) of every kernel tap, in row-major window order."""
    for i in range(k[0]):
        rows = slice(i * d[0], i * d[0] + s[0] * (out[0] - 1) + 1, s[0])
        for j in range(k[1]):
            yield i, j, rows, slice(j * d[1], j * d[1] + s[1] * (out[1] - 1) + 1, s[1])


def _unpad(gp: np.ndarray, x_shape: tuple, p) -> np.ndarray:
    if gp.shape == x_shape:
        return gp
    h, w = x_shape[-2:]
    return np.ascontiguousarray(gp[..., p[0]:p[0] + h, p[1]:p[1] + w])


# --- max pool ---------------------------------------------------------------------------------

def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,  # noqa: A002
               return_indices: bool = False):
    """2-D max pooling over (N, C, H, W) or (C, H, W); with ``return_indices`` also returns the
    flat ``h * W + w`` index of each maximum (int64), as ``max_unpool2d`` expects."""
    x = input._data
    k, s, p, d, out = _geometry(x, kernel_size, stride, padding, dilation, ceil_mode, "max_pool2d")
    fill = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = _padded(x, p, k, s, d, out, fill)
    taps = list(_taps(k, s, d, out))
    y = np.maximum(xp[..., taps[0][2], taps[0][3]], xp[..., taps[1][2], taps[1][3]]) if len(taps) > 1 \
        else np.array(xp[..., taps[0][2], taps[0][3]])
    for _, _, rows, cols in taps[2:]:
        np.maximum(y, xp[..., rows, cols], out=y)
    x_shape, xp_shape = x.shape, xp.shape
    # Windows that neither overlap nor skip input (the usual k == stride pool) let each tap write
    # its share straight into the gradient: no zero fill, no read-modify-write.
    disjoint = all(dd == 1 and ss >= kk for kk, ss, dd in zip(k, s, d))
    tiled = disjoint and all(ss == kk and o * ss == n for kk, ss, o, n in zip(k, s, out, xp.shape[-2:]))

    def backward(g, _g_idx=None):
        gp = np.empty(xp_shape, g.dtype) if tiled else np.zeros(xp_shape, g.dtype)
        taken = None
        for _, _, rows, cols in taps:
            hit = np.equal(xp[..., rows, cols], y)
            if taken is None:
                taken = hit
            else:  # ties: only the first tap holding the maximum gets the gradient
                hit &= ~taken
                taken |= hit
            if disjoint:
                np.multiply(g, hit, out=gp[..., rows, cols])
            else:
                gp[..., rows, cols] += g * hit
        return (_unpad(gp, x_shape, p),)

    if not return_indices:
        return result(y, "MaxPool2DWithIndicesBackward0", (input,), backward, saved=(input,), save_output=True)
    idx = _argmax_indices(xp, y, taps, x.shape[-1], s, p, d)
    return tuple(multi_result((y, idx), "MaxPool2DWithIndicesBackward0", (input,), backward,
                              saved=(input,), differentiable=(True, False)))


def _argmax_indices(xp: np.ndarray, y: np.ndarray, taps, width: int, s, p, d) -> np.ndarray:
    """Flat input index ``h * W + w`` of the first maximum of every window."""
    tap_i = np.zeros(y.shape, np.int64)
    tap_j = np.zeros(y.shape, np.int64)
    found = np.zeros(y.shape, bool)
    for i, j, rows, cols in taps:
        hit = (xp[..., rows, cols] == y) & ~found
        tap_i[hit], tap_j[hit] = i, j
        found |= hit
    hh = np.arange(y.shape[-2]).reshape(-1, 1) * s[0] - p[0] + tap_i * d[0]
    ww = np.arange(y.shape[-1]) * s[1] - p[1] + tap_j * d[1]
    return hh * width + ww


# --- average pools ----------------------------------------------------------------------------

def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True, divisor_override: int | None = None):
    """2-D average pooling; divisors follow torch (padding counted unless ``count_include_pad``
    is False; windows reaching past the padding in ceil mode are clipped)."""
    x = input._data
    k, s, p, d, out = _geometry(x, kernel_size, stride, padding, 1, ceil_mode, "avg_pool2d")
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    xp = _padded(x, p, k, s, d, out, 0)
    taps = list(_taps(k, s, d, out))
    acc_dtype = x.dtype if x.dtype.kind == "f" else np.float64
    total = np.zeros(x.shape[:-2] + tuple(out), acc_dtype)
    for _, _, rows, cols in taps:
        total += xp[..., rows, cols]
    div = _divisor(x.shape[-2:], k, s, p, out, count_include_pad, divisor_override).astype(acc_dtype)
    y = total / div
    y = y if x.dtype.kind == "f" else np.trunc(y).astype(x.dtype)
    x_shape, xp_shape = x.shape, xp.shape

    def backward(g):
        share = g / div.astype(g.dtype)
        gp = np.zeros(xp_shape, g.dtype)
        for _, _, rows, cols in taps:
            gp[..., rows, cols] += share
        return (_unpad(gp, x_shape, p),)

    return result(y, "AvgPool2DBackward0", (input,), backward)


def _divisor(hw, k, s, p, out, count_include_pad: bool, divisor_override) -> np.ndarray:
    """(Ho, Wo) divisors, as torch's avg_pool2d kernel computes them per window."""
    if divisor_override is not None:
        return np.full(tuple(out), divisor_override, np.float64)
    sizes = []
    for n, kk, ss, pp, o in zip(hw, k, s, p, out):
        start = np.arange(o) * ss - pp
        end = np.minimum(start + kk, n + pp)
        padded_len = end - start
        clipped_len = np.minimum(end, n) - np.maximum(start, 0)
        sizes.append(padded_len if count_include_pad else clipped_len)
    return np.outer(sizes[0], sizes[1]).astype(np.float64)


def adaptive_avg_pool2d(input, output_size: int | Sequence[int | None]):  # noqa: A002
    """Average over adaptive windows ``[floor(i·H/Ho), ceil((i+1)·H/Ho))`` giving an
    ``output_size`` map; ``None`` keeps that input size. (1, 1) is a ``mean``, as in torch."""
    x = input._data
    size = _adaptive_size(output_size, x)
    if size == (1, 1):
        return reduction.mean(input, dim=(-2, -1), keepdim=True)
    ph = _window_matrix(x.shape[-2], size[0], x.dtype)
    pw = _window_matrix(x.shape[-1], size[1], x.dtype)
    y = ph @ x @ pw.T

    def backward(g):
        return (ph.T @ g @ pw,)

    return result(y, "AdaptiveAvgPool2DBackward0", (input,), backward)


def _adaptive_size(output_size, x: np.ndarray) -> tuple[int, int]:
    if isinstance(output_size, int | np.integer):
        size = [int(output_size)] * 2
    else:
        size = list(output_size)
        if len(size) != 2:
            raise RuntimeError("adaptive_avg_pool2d: output_size must be 2")
    if x.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {shape_str(x.shape)}")
    for dim in range(1, x.ndim):
        if x.shape[dim] == 0:
            raise RuntimeError(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, "
                f"but input has sizes {shape_str(x.shape)} with dimension {dim} being empty"
            )
    size = [x.shape[-2 + i] if v is None else int(v) for i, v in enumerate(size)]
    if any(v < 0 for v in size):
        raise RuntimeError(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but "
            f"received {{{size[0]}, {size[1]}}}"
        )
    return size[0], size[1]


def _window_matrix(n: int, out: int, dtype: np.dtype) -> np.ndarray:
    """(out, n): row i averages input positions floor(i·n/out) <= j < ceil((i+1)·n/out)."""
    i = np.arange(out)
    start = (i * n) // out
    end = -((-(i + 1) * n) // out)
    j = np.arange(n)
    member = (j >= start[:, None]) & (j < end[:, None])
    return (member / (end - start)[:, None]).astype(dtype if dtype.kind == "f" else np.float64)


# --- 1-D pools: the 2-D ops over an inserted height-1 dim, as torch records them -----------------

def _as_2d(input, fname: str, message: str):  # noqa: A002
    if input.ndim not in (2, 3):
        raise RuntimeError(message.format(fname=fname, ndim=input.ndim, shape=shape_str(input.shape)))
    return input.unsqueeze(-2)


_DIMS_MSG = ("Expected 2 to 3 dimensions, but got {ndim}-dimensional tensor for argument #1 'self' "
             "(while checking arguments for {fname})")


def _single(value, name: str, fname: str) -> int:
    if isinstance(value, int | np.integer):
        return int(value)
    value = tuple(value)
    if len(value) != 1:
        if fname == "max_pool1d":  # torch checks max_pool1d's arguments in its own (varying) words
            kinds = {"stride": "None, an int, list of ints, or", "padding": "an int, list of ints, or"}
            raise RuntimeError(f"max_pool1d() {name} must be {kinds.get(name, 'an int, list of ints or')} tuple of "
                               f"ints of size 1 but got size {len(value)}")
        raise RuntimeError(f"{fname}() argument '{name}' should contain one int (got {len(value)})")
    return int(value[0])


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,  # noqa: A002
               count_include_pad: bool = True):
    """1-D average pooling over (N, C, L) or (C, L): ``avg_pool2d`` with a (1, k) window
    (``SqueezeBackward1`` over ``AvgPool2DBackward0``, as torch)."""
    k = _single(kernel_size, "kernel_size", "avg_pool1d")
    s = k if stride is None or (isinstance(stride, Sequence) and len(stride) == 0) \
        else _single(stride, "stride", "avg_pool1d")
    p = _single(padding, "padding", "avg_pool1d")
    x2 = _as_2d(input, "avg_pool1d", _DIMS_MSG)
    return avg_pool2d(x2, (1, k), (1, s), (0, p), ceil_mode, count_include_pad).squeeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,  # noqa: A002
               return_indices: bool = False):
    """1-D max pooling over (N, C, L) or (C, L): ``max_pool2d`` with a (1, k) window; indices
    are positions along L."""
    k = _single(kernel_size, "kernel_size", "max_pool1d")
    s = k if stride is None or (isinstance(stride, Sequence) and len(stride) == 0) \
        else _single(stride, "stride", "max_pool1d")
    p, d = _single(padding, "padding", "max_pool1d"), _single(dilation, "dilation", "max_pool1d")
    if input.ndim not in (2, 3):
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for "
                           f"input, but got:{shape_str(input.shape)}")
    out = _pool_out(input.shape[-1], k, s, p, d, ceil_mode)
    if out < 1 and k > 0 and s > 0 and d > 0 and 0 <= p <= ((k - 1) * d + 1) // 2:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")
    res = max_pool2d(input.unsqueeze(-2), (1, k), (1, s), (0, p), (1, d), ceil_mode, return_indices)
    if return_indices:
        return res[0].squeeze(-2), res[1].squeeze(-2)
    return res.squeeze(-2)


def adaptive_avg_pool1d(input, output_size):  # noqa: A002
    """Adaptive average pooling of (N, C, L) or (C, L) to ``output_size`` positions."""
    size = _single(output_size, "output_size", "adaptive_avg_pool1d")
    x2 = _as_2d(input, "adaptive_avg_pool1d", _DIMS_MSG)
    return adaptive_avg_pool2d(x2, (1, size)).squeeze(-2)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):  # noqa: A002
    """Max over adaptive windows ``[floor(i·H/Ho), ceil((i+1)·H/Ho))``; with ``return_indices``
    also the flat ``h·W + w`` index of each (first) maximum (``AdaptiveMaxPool2DBackward0``)."""
    x = input._data
    if x.ndim not in (3, 4):
        raise RuntimeError(f"adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {shape_str(x.shape)}")
    size = _adaptive_size(output_size, x)
    h, w = x.shape[-2:]
    rows, cols = _window_index(h, size[0]), _window_index(w, size[1])
    if h % size[0] == 0 and w % size[1] == 0:  # equal disjoint windows: a reshape, no gather
        win = x.reshape(x.shape[:-2] + (size[0], h // size[0], size[1], w // size[1]))
    else:
        # every window padded to the longest by repeating its last element, which never changes
        # its maximum nor which element comes first
        win = np.take(np.take(x, rows.reshape(-1), axis=-2), cols.reshape(-1), axis=-1)
        win = win.reshape(x.shape[:-2] + (size[0], rows.shape[1], size[1], cols.shape[1]))
    # win: (..., Ho, kh, Wo, kw)
    win = np.moveaxis(win, -3, -2).reshape(x.shape[:-2] + (size[0], size[1], -1))
    pick = win.argmax(axis=-1)
    y = np.take_along_axis(win, pick[..., None], axis=-1)[..., 0]
    kw = cols.shape[1]
    hh = rows[np.arange(size[0])[:, None], pick // kw]
    ww = cols[np.arange(size[1])[None, :], pick % kw]
    idx = (hh * w + ww).astype(np.int64)
    x_shape = x.shape

    def backward(g, _g_idx=None):
        planes = int(np.prod(x_shape[:-2], dtype=np.int64))
        flat = (np.arange(planes).reshape((-1, 1)) * (h * w) + idx.reshape(planes, -1)).reshape(-1)
        gx = np.bincount(flat, weights=g.reshape(-1), minlength=planes * h * w)
        return (gx.astype(g.dtype).reshape(x_shape),)

    y_t, i_t = multi_result((y, idx), "AdaptiveMaxPool2DBackward0", (input,), backward, saved=(input,),
                            differentiable=(True, False))
    return (y_t, i_t) if return_indices else y_t


def _window_index(n: int, out: int) -> np.ndarray:
    """(out, longest window) input positions of each adaptive window, the last repeated."""
    i = np.arange(out)
    start = (i * n) // out
    end = -((-(i + 1) * n) // out)
    k = int((end - start).max()) if out else 0
    return np.minimum(start[:, None] + np.arange(k), end[:, None] - 1)
