"""Resampling and rearranging ops: pad (constant, reflect, replicate, circular), interpolate
(nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area), unfold/fold (im2col and
col2im), pixel_shuffle/pixel_unshuffle, channel_shuffle, affine_grid and grid_sample (2-D).

Padding and interpolation are separable: along each resized dim, output position ``j`` reads
input positions ``idx_k[j]`` with weights ``w_k[j]`` (one tap for padding and nearest, two for
linear, four for cubic), from torch's index and weight formulas (in float32 where torch computes
them in float32, so nearest picks the same pixels). The forward is a weighted sum of ``np.take``
per tap; the backward sums each tap's weighted gradient back into the input position it read
(``_scatter_sum``: a few ``take``s of distinct targets, or ``np.add.reduceat`` over runs of
equal indices), O(size) per dim: no ``np.add.at``, no dense (out, in) matrix.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

import engine._ops.shape as shape_ops
import engine.nn._functional.pooling as pooling

from ..._ops._core import result
from ._utils import shape_str

# --- shared: per-dim taps --------------------------------------------------------------------------


Taps = list  # [(indices (n_out,), weights (n_out,) or None), ...] along one dim


def _along(w: np.ndarray, ndim: int, axis: int, dtype) -> np.ndarray:
    """Weights shaped to broadcast along ``axis`` of an ``ndim`` array."""
    return w.astype(dtype, copy=False).reshape((-1,) + (1,) * (ndim - axis - 1))


def _resample(x: np.ndarray, taps: Sequence[Taps | None], first_axis: int) -> np.ndarray:
    """``x`` with ``taps[i]`` applied along axis ``first_axis + i`` (None: kept)."""
    for i, dim_taps in enumerate(taps):
        if dim_taps is None:
            continue
        axis = first_axis + i
        out = None
        for idx, w in dim_taps:
            part = np.take(x, idx, axis=axis)
            if w is not None:
                part *= _along(w, x.ndim, axis, x.dtype)
            out = part if out is None else np.add(out, part, out=out)
        x = out
    return np.ascontiguousarray(x)


def _scatter_sum(g: np.ndarray, idx: np.ndarray, n: int, axis: int) -> np.ndarray:
    """The adjoint of ``np.take(x, idx, axis)`` for an ``x`` of size ``n`` along ``axis``: every
    slice of ``g`` added into position ``idx[j]``.

    Indices read at most a few times (padding, upsampling by small factors, every downsampling)
    are summed in rounds: round ``r`` takes the ``r``-th reader of each position, whose targets
    are distinct, so one ``take`` and one assignment per round. Many readers per position fall
    back to ``np.add.reduceat`` over the runs of equal (sorted) indices."""
    order = np.argsort(idx, kind="stable")
    sidx = idx[order]
    starts = np.flatnonzero(np.concatenate(([True], sidx[1:] != sidx[:-1])))
    runs = np.diff(np.append(starts, sidx.size))
    shape = list(g.shape)
    shape[axis] = n
    lead = (slice(None),) * axis
    if runs.max() > 4:
        seg = np.add.reduceat(np.take(g, order, axis=axis), starts, axis=axis)
        if starts.size == n:
            return seg
        out = np.zeros(shape, g.dtype)
        out[lead + (sidx[starts],)] = seg
        return out
    rank = np.arange(sidx.size) - np.repeat(starts, runs)
    out = None
    for r in range(int(runs.max())):
        pick = rank == r
        src, tgt = order[pick], sidx[pick]
        part = np.take(g, src, axis=axis)
        if tgt.size == n:  # every position once, in order (tgt is sorted and distinct)
            out = part if out is None else np.add(out, part, out=out)
            continue
        if out is None:
            out = np.zeros(shape, g.dtype)
        if tgt[-1] - tgt[0] + 1 == tgt.size:  # a contiguous range: a slice, not a fancy index
            out[lead + (slice(int(tgt[0]), int(tgt[-1]) + 1),)] += part
        else:
            out[lead + (tgt,)] += part
    return out


def _resample_adjoint(g: np.ndarray, taps: Sequence[Taps | None], sizes: Sequence[int], first_axis: int):
    for i in reversed(range(len(taps))):
        if taps[i] is None:
            continue
        axis = first_axis + i
        total = None
        for idx, w in taps[i]:
            gw = g * _along(w, g.ndim, axis, g.dtype) if w is not None else g
            part = _scatter_sum(gw, idx, sizes[i], axis)
            total = part if total is None else np.add(total, part, out=total)
        g = total
    return np.ascontiguousarray(g)


def _resample_op(input, taps: Sequence[Taps | None], first_axis: int, name: str):  # noqa: A002
    """One node ``name`` resampling ``input`` along consecutive dims from ``first_axis``."""
    x = input._data
    out = _resample(x, taps, first_axis)
    sizes = [x.shape[first_axis + i] for i in range(len(taps))]
    return result(out, name, (input,), lambda g: (_resample_adjoint(g, taps, sizes, first_axis),))


# --- pad -----------------------------------------------------------------------------------------

_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input, pad: Sequence[int], mode: str = "constant", value: float | None = None):  # noqa: A002
    """``F.pad``: ``pad`` lists (left, right) amounts from the last dim backwards; negative
    amounts crop. ``constant`` pads any dims with ``value`` (``ConstantPadNdBackward0``);
    ``reflect`` (mirror without repeating the edge), ``replicate`` (repeat the edge) and
    ``circular`` (wrap around) pad the last 1, 2 or 3 dims of a batched or unbatched input, as
    torch allows (``ReflectionPad2DBackward0``, ``ReplicationPad2DBackward0``, ...; torch builds
    circular padding from slice copies, the engine records one ``CopySlices`` node)."""
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(pad)} and input of dimension {input.ndim}"
        )
    if mode == "constant":
        return shape_ops.pad(input, pad, value=value)
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    k = len(pad) // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    x = input._data
    first = x.ndim - k
    amounts = [(pad[2 * (k - 1 - i)], pad[2 * (k - 1 - i) + 1]) for i in range(k)]  # per dim, in order
    _check_pad(x, mode, amounts, first, k)
    idx = [_pad_index(x.shape[first + i], lo, hi, mode) for i, (lo, hi) in enumerate(amounts)]
    name = {"reflect": f"ReflectionPad{k}DBackward0", "replicate": f"ReplicationPad{k}DBackward0",
            "circular": "CopySlices"}[mode]
    return _resample_op(input, [[(ix, None)] for ix in idx], first, name)


def _check_pad(x: np.ndarray, mode: str, amounts, first: int, k: int) -> None:
    if mode == "reflect":
        for i, (lo, hi) in enumerate(amounts):
            n = x.shape[first + i]
            if lo >= n or hi >= n:
                raise RuntimeError(
                    f"Argument #{2 * k + 2}: Padding size should be less than the corresponding input "
                    f"dimension, but got: padding ({lo}, {hi}) at dimension {first + i} of input "
                    f"{shape_str(x.shape)}"
                )
    elif mode == "replicate":
        if any(n == 0 for n in x.shape[1:]):
            raise RuntimeError(
                f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 batch size and other "
                f"non-zero dimensions for input, but got: {shape_str(x.shape)}"
            )
    elif any(lo > x.shape[first + i] or hi > x.shape[first + i] for i, (lo, hi) in enumerate(amounts)):
        raise RuntimeError("Padding value causes wrapping around more than once.")


def _pad_index(n: int, lo: int, hi: int, mode: str) -> np.ndarray:
    """Input position read by each output position along one padded dim."""
    if mode == "circular":  # torch crops first, then wraps around what is left
        start, stop = max(-lo, 0), n - max(-hi, 0)
        return (np.arange(n + lo + hi) - max(lo, 0)) % (stop - start) + start
    s = np.arange(n + lo + hi) - lo
    if mode == "reflect":
        s = np.abs(s)
        return np.where(s > n - 1, 2 * (n - 1) - s, s)
    return np.clip(s, 0, n - 1)


# --- interpolate ---------------------------------------------------------------------------------

_MODES_BY_DIM = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_NODE_KIND = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear",
              "bilinear": "Bilinear", "bicubic": "Bicubic", "trilinear": "Trilinear"}
_CUBIC_A = -0.75


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False):
    """Resize the spatial dims of an (N, C, d1[, d2[, d3]]) input to ``size`` or by
    ``scale_factor`` (output size ``floor(d · scale)``), with torch's sampling positions:
    ``nearest`` picks ``floor(j · scale)``, ``nearest-exact`` ``floor((j + 0.5) · scale)``;
    ``linear``/``bilinear``/``trilinear`` and ``bicubic`` (a = -0.75, edge indices clamped)
    interpolate half-pixel centres, or corner pixels with ``align_corners=True``; ``area`` is
    adaptive average pooling. A given ``scale_factor`` sets the sampling step unless
    ``recompute_scale_factor``. ``antialias`` and ``lanczos`` are not implemented."""
    x = input._data
    dim = x.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not implemented in engine")
    out_size, scales = _output_size(x, dim, size, scale_factor, recompute_scale_factor)
    if mode in _MODES_BY_DIM and _MODES_BY_DIM[mode] != dim and dim in (1, 2, 3):
        need = _MODES_BY_DIM[mode] + 2
        raise NotImplementedError(f"Got {x.ndim}D input, but {mode} mode needs {need}D input")
    if dim not in (1, 2, 3) or (mode not in _NODE_KIND and mode != "area"):
        raise NotImplementedError(
            f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {x.ndim}D) for the modes: nearest | "
            f"linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact (got {mode})"
        )
    if mode == "area":
        if dim == 3:
            raise NotImplementedError("interpolate: mode='area' on 5-D input is not implemented in engine")
        pool = pooling.adaptive_avg_pool1d if dim == 1 else pooling.adaptive_avg_pool2d
        return pool(input, out_size)
    _check_sizes(x.shape[2:], out_size)
    name = f"Upsample{_NODE_KIND[mode]}{dim}DBackward0"
    if mode in ("nearest", "nearest-exact"):
        idx = [_nearest_index(n, o, s, mode == "nearest-exact") for n, o, s in zip(x.shape[2:], out_size, scales)]
        return _resample_op(input, [[(ix, None)] for ix in idx], 2, name)
    if x.dtype.kind != "f":
        raise NotImplementedError(f"interpolate: mode='{mode}' needs a floating point input in engine")
    cubic = mode == "bicubic"
    taps = [_linear_taps(n, o, s, align_corners, cubic) for n, o, s in zip(x.shape[2:], out_size, scales)]
    return _resample_op(input, taps, 2, name)


def _output_size(x: np.ndarray, dim: int, size, scale_factor, recompute) -> tuple[list[int], list]:
    """(output sizes, the scale per dim used for sampling positions or None)."""
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        if recompute:
            raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
        if isinstance(size, Sequence):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got input with "
                    f"spatial dimensions of {spatial} and output size of {size}. Please provide input tensor "
                    "in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format."
                )
            return [int(s) for s in size], [None] * dim
        return [int(size)] * dim, [None] * dim
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    if isinstance(scale_factor, Sequence):
        if len(scale_factor) != dim:
            raise ValueError(
                "Input and scale_factor must have the same number of spatial dimensions, but got input with "
                f"spatial dimensions of {spatial} and scale_factor of shape {scale_factor}. Please provide "
                "input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format."
            )
        scales = [float(s) for s in scale_factor]
    else:
        scales = [float(scale_factor)] * dim
    out = [math.floor(n * s) for n, s in zip(spatial, scales)]
    return out, ([None] * dim if recompute else scales)


def _check_sizes(spatial, out) -> None:
    if all(n > 0 for n in spatial) and all(o > 0 for o in out):
        return
    names = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}[len(spatial)]
    fmt = lambda v: ", ".join(f"{k}: {n}" for k, n in zip(names, v))  # noqa: E731
    raise RuntimeError(
        f"Input and output sizes should be greater than 0, but got input ({fmt(spatial)}) output ({fmt(out)})"
    )


def _nearest_index(n: int, out: int, scale, exact: bool) -> np.ndarray:
    """torch's ``nearest_idx``/``nearest_exact_idx`` in float32."""
    step = np.float32(1.0 / scale if scale is not None and scale > 0 else n / out)
    j = np.arange(out, dtype=np.float32)
    if not exact and out == n:
        return np.arange(out)
    if not exact and out == 2 * n:
        return np.arange(out) // 2
    src = np.floor((j + np.float32(0.5)) * step) if exact else np.floor(j * step)
    return np.minimum(src.astype(np.int64), n - 1)


def _linear_taps(n: int, out: int, scale, align_corners: bool, cubic: bool) -> Taps:
    """(indices, weights) of linear (2 taps) or cubic (4 taps, a = -0.75, edge indices clamped)
    interpolation at torch's source positions."""
    if align_corners:
        step = np.float32((n - 1) / (out - 1)) if out > 1 else np.float32(0)
    else:
        step = np.float32(1.0 / scale if scale is not None and scale > 0 else n / out)
    j = np.arange(out, dtype=np.float32)
    src = j * step if align_corners else (j + np.float32(0.5)) * step - np.float32(0.5)
    if cubic:
        i0 = np.floor(src).astype(np.int64)
        t = src - i0.astype(np.float32)
        return [(np.clip(i0 + k, 0, n - 1), w) for k, w in zip((-1, 0, 1, 2), _cubic_weights(t))]
    if out == n:  # torch copies when the size does not change
        return [(np.arange(n), None)]
    src = np.maximum(src, 0)
    i0 = np.minimum(src.astype(np.int64), n - 1)
    lam = np.clip(src - i0, 0, 1)
    return [(i0, 1 - lam), (i0 + (i0 < n - 1), lam)]


def _cubic_weights(t: np.ndarray) -> tuple[np.ndarray, ...]:
    """Keys' cubic convolution weights for taps -1, 0, 1, 2 at fraction ``t`` (a = -0.75)."""
    a = _CUBIC_A

    def near(u):  # |u| <= 1
        return ((a + 2) * u - (a + 3)) * u * u + 1

    def far(u):  # 1 < |u| < 2
        return ((a * u - 5 * a) * u + 8 * a) * u - 4 * a

    return far(t + 1), near(t), near(1 - t), far(2 - t)


# --- unfold / fold -------------------------------------------------------------------------------


def _pair(v, name: str) -> tuple[int, int]:
    if isinstance(v, int | np.integer):
        return int(v), int(v)
    v = tuple(int(a) for a in v)
    if len(v) == 1:
        return v[0], v[0]
    if len(v) != 2:
        raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(v)}")
    return v


def _blocks(hw, k, d, p, s) -> tuple[int, int]:
    return tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1 for n, kk, dd, pp, ss in zip(hw, k, d, p, s))


def _im2col(xp: np.ndarray, k, d, s, blocks) -> np.ndarray:
    """(..., C, Hp, Wp) padded input -> (..., C·kh·kw, L), channel-major as torch lays it out."""
    lead = xp.shape[:-2]
    cols = np.empty(lead + (k[0], k[1], blocks[0], blocks[1]), xp.dtype)
    for i in range(k[0]):  # one strided slice per kernel tap
        for j in range(k[1]):
            cols[..., i, j, :, :] = xp[..., i * d[0]:i * d[0] + s[0] * (blocks[0] - 1) + 1:s[0],
                                       j * d[1]:j * d[1] + s[1] * (blocks[1] - 1) + 1:s[1]]
    return cols.reshape(lead[:-1] + (lead[-1] * k[0] * k[1], blocks[0] * blocks[1]))


def _col2im(cols: np.ndarray, c: int, hw, k, d, p, s, blocks) -> np.ndarray:
    """The adjoint of ``_im2col``: sums every block's values back into (..., C, H, W)."""
    lead = cols.shape[:-2]
    cols = cols.reshape(lead + (c, k[0], k[1], blocks[0], blocks[1]))
    xp = np.zeros(lead + (c, hw[0] + 2 * p[0], hw[1] + 2 * p[1]), cols.dtype)
    for i in range(k[0]):
        for j in range(k[1]):
            xp[..., i * d[0]:i * d[0] + s[0] * (blocks[0] - 1) + 1:s[0],
               j * d[1]:j * d[1] + s[1] * (blocks[1] - 1) + 1:s[1]] += cols[..., i, j, :, :]
    return np.ascontiguousarray(xp[..., p[0]:p[0] + hw[0], p[1]:p[1] + hw[1]])


def _check_blocks(hw, k, d, p, blocks) -> None:
    if blocks[0] < 1 or blocks[1] < 1:
        raise RuntimeError(
            f"Given input with spatial size ({hw[0]}, {hw[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, "
            f"{d[1]}), padding=({p[0]}, {p[1]}), calculated shape of the array of sliding blocks as "
            f"({blocks[0]}, {blocks[1]}), but its components must be at least one."
        )


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """im2col: every ``kernel_size`` block of an (N, C, H, W) or (C, H, W) input as a column,
    giving (N, C·kh·kw, L) with L blocks in row-major order (``Im2ColBackward0``)."""
    x = input._data
    if x.ndim not in (3, 4):
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, "
            f"but got: {shape_str(x.shape)}"
        )
    k, d, p, s = (_pair(v, n) for v, n in ((kernel_size, "kernel_size"), (dilation, "dilation"),
                                           (padding, "padding"), (stride, "stride")))
    hw = x.shape[-2:]
    blocks = _blocks(hw, k, d, p, s)
    _check_blocks(hw, k, d, p, blocks)
    xp = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p[0], p[0]), (p[1], p[1])]) if any(p) else x
    out = _im2col(xp, k, d, s, blocks)
    c = x.shape[-3]

    def backward(g):
        return (_col2im(g, c, hw, k, d, p, s, blocks),)

    return result(out, "Im2ColBackward0", (input,), backward)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):  # noqa: A002
    """col2im: sums (N, C·kh·kw, L) or (C·kh·kw, L) columns into an ``output_size`` image,
    overlapping blocks adding up (``Col2ImBackward0``); the inverse layout of ``unfold``."""
    x = input._data
    if x.ndim not in (2, 3) or any(n == 0 for n in x.shape[-2:]):
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero dimensions "
            f"for input, but got: {shape_str(x.shape)}"
        )
    hw, k, d, p, s = (_pair(v, n) for v, n in ((output_size, "output_size"), (kernel_size, "kernel_size"),
                                               (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    rows, length = x.shape[-2:]
    if rows % (k[0] * k[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
            f"input.size(1)={rows} and kernel_size=({k[0]}, {k[1]})."
        )
    blocks = _blocks(hw, k, d, p, s)
    _check_blocks(hw, k, d, p, blocks)
    if blocks[0] * blocks[1] != length:
        raise RuntimeError(
            f"Given output_size=({hw[0]}, {hw[1]}), kernel_size=({k[0]}, {k[1]}), dilation=({d[0]}, {d[1]}), "
            f"padding=({p[0]}, {p[1]}), stride=({s[0]}, {s[1]}), expected size of input's dimension 2 to match "
            f"the calculated number of sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, "
            f"but got input.size(2)={length}."
        )
    c = rows // (k[0] * k[1])
    out = _col2im(x, c, hw, k, d, p, s, blocks)

    def backward(g):
        gp = np.pad(g, [(0, 0)] * (g.ndim - 2) + [(p[0], p[0]), (p[1], p[1])]) if any(p) else g
        return (_im2col(gp, k, d, s, blocks),)

    return result(out, "Col2ImBackward0", (input,), backward)


# --- pixel and channel shuffles ------------------------------------------------------------------


def _shuffle(x: np.ndarray, r: int, up: bool) -> np.ndarray:
    """(*, C·r², H, W) -> (*, C, H·r, W·r) when ``up``, the inverse otherwise."""
    lead = x.shape[:-3]
    c, h, w = x.shape[-3:]
    nl = len(lead)
    if up:
        oc = c // (r * r)
        y = x.reshape(lead + (oc, r, r, h, w)).transpose(*range(nl), nl, nl + 3, nl + 1, nl + 4, nl + 2)
        return np.ascontiguousarray(y).reshape(lead + (oc, h * r, w * r))
    y = x.reshape(lead + (c, h // r, r, w // r, r)).transpose(*range(nl), nl, nl + 2, nl + 4, nl + 1, nl + 3)
    return np.ascontiguousarray(y).reshape(lead + (c * r * r, h // r, w // r))


def _check_shuffle_dims(x: np.ndarray, fname: str) -> None:
    if x.ndim < 3:
        raise RuntimeError(f"{fname} expects input to have at least 3 dimensions, but got input with {x.ndim} "
                           "dimension(s)")


def pixel_shuffle(input, upscale_factor: int):  # noqa: A002
    """(*, C·r², H, W) -> (*, C, H·r, W·r) (``PixelShuffleBackward0``)."""
    x = input._data
    r = int(upscale_factor)
    _check_shuffle_dims(x, "pixel_shuffle")
    if x.shape[-3] % (r * r):
        raise RuntimeError(
            "pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of upscale_factor, "
            f"but input.size(-3)={x.shape[-3]} is not divisible by {r * r}"
        )
    return result(_shuffle(x, r, True), "PixelShuffleBackward0", (input,), lambda g: (_shuffle(g, r, False),))


def pixel_unshuffle(input, downscale_factor: int):  # noqa: A002
    """(*, C, H·r, W·r) -> (*, C·r², H, W) (``PixelUnshuffleBackward0``)."""
    x = input._data
    r = int(downscale_factor)
    _check_shuffle_dims(x, "pixel_unshuffle")
    for axis, what in ((-2, "height"), (-1, "width")):
        if x.shape[axis] % r:
            raise RuntimeError(
                f"pixel_unshuffle expects {what} to be divisible by downscale_factor, but input.size({axis})="
                f"{x.shape[axis]} is not divisible by {r}"
            )
    return result(_shuffle(x, r, False), "PixelUnshuffleBackward0", (input,), lambda g: (_shuffle(g, r, True),))


def channel_shuffle(input, groups: int):  # noqa: A002
    """(N, g·k, *) -> channels regrouped as (k, g) (``ChannelShuffleBackward0``)."""
    x = input._data
    c = x.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    idx = np.arange(c).reshape(groups, c // groups).T.reshape(-1)
    inv = np.argsort(idx)
    out = np.ascontiguousarray(x[:, idx])
    return result(out, "ChannelShuffleBackward0", (input,), lambda g: (np.ascontiguousarray(g[:, inv]),))


# --- affine_grid / grid_sample -------------------------------------------------------------------

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


def _default_align(align_corners: bool | None) -> bool:
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=3)
        return False
    return bool(align_corners)


def _base_coords(n: int, align_corners: bool) -> np.ndarray:
    """Normalised pixel-centre coordinates in [-1, 1] (pixel edges when not ``align_corners``)."""
    if n <= 1:
        return np.zeros(n)
    c = np.linspace(-1.0, 1.0, n)
    return c if align_corners else c * (n - 1) / n


def affine_grid(theta, size, align_corners: bool | None = None):
    """The (N, H, W, 2) sampling grid of the 2-D affine maps ``theta`` (N, 2, 3) for an output of
    ``size`` (N, C, H, W): ``grid[n, h, w] = theta[n] @ (x_w, y_h, 1)`` with normalised ``x``,
    ``y`` (``AffineGridGeneratorBackward0``). 3-D transforms (5-D ``size``) are not implemented."""
    align = _default_align(align_corners)
    if theta._data.dtype.kind != "f":
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    size = tuple(size)
    if len(size) == 4:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (2, 3):
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size {size}. "
                             f"Got {theta.shape}.")
    elif len(size) == 5:
        if theta.ndim != 3 or tuple(theta.shape[-2:]) != (3, 4):
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size {size}. "
                             f"Got {theta.shape}.")
        raise NotImplementedError("affine_grid: 3-D affine transforms (5-D size) are not implemented in engine")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n, _, h, w = size
    t = theta._data
    base = np.empty((h, w, 3), t.dtype)
    base[..., 0] = _base_coords(w, align)[None, :]
    base[..., 1] = _base_coords(h, align)[:, None]
    base[..., 2] = 1
    flat = base.reshape(1, h * w, 3)
    out = (flat @ t.transpose(0, 2, 1)).reshape(n, h, w, 2)

    def backward(g):
        return (g.reshape(n, h * w, 2).transpose(0, 2, 1) @ flat,)

    return result(out, "AffineGridGeneratorBackward0", (theta,), backward)


def _source_coords(g: np.ndarray, n: int, align: bool, padding_mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates of normalised grid values along one axis, after torch's padding-mode
    transform, and d(coordinate)/d(grid value) (torch's ``grid_sampler_compute_source_index_set_grad``)."""
    scale = (n - 1) / 2 if align else n / 2
    x = (g + 1) * scale if align else ((g + 1) * n - 1) / 2
    d = np.full(g.shape, scale)
    if padding_mode == "border":
        inside = (x > 0) & (x < n - 1)
        return np.clip(x, 0, n - 1), d * inside
    if padding_mode == "reflection":
        lo, hi = (0.0, 2.0 * (n - 1)) if align else (-1.0, 2.0 * n - 1)
        if lo == hi:
            return np.zeros_like(x), np.zeros_like(x)
        low, span = lo / 2, (hi - lo) / 2
        y = x - low
        sign = np.where(y < 0, -1.0, 1.0)
        y = np.abs(y)
        extra = np.fmod(y, span)
        flips = np.floor(y / span)
        even = flips % 2 == 0
        x = np.where(even, extra + low, span - extra + low)
        d = d * np.where(even, sign, -sign)
        inside = (x > 0) & (x < n - 1)
        return np.clip(x, 0, n - 1), d * inside
    return x, d


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",  # noqa: A002
                align_corners: bool | None = None):
    """Samples (N, C, H, W) ``input`` at the normalised (x, y) locations of ``grid`` (N, Ho, Wo, 2):
    ``bilinear`` or ``nearest`` (round half to even, as torch), with ``zeros``, ``border`` or
    ``reflection`` padding (``GridSampler2DBackward0``; gradients for input and grid). Bicubic and
    5-D (volumetric) sampling are not implemented."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', "
                         f"but got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    align = _default_align(align_corners)
    x, gr = input._data, grid._data
    _check_grid(x, gr)
    if mode == "bicubic":
        raise NotImplementedError("grid_sample: mode='bicubic' is not implemented in engine")
    n, c, h, w = x.shape
    ix, dx = _source_coords(gr[..., 0].astype(np.float64), w, align, padding_mode)
    iy, dy = _source_coords(gr[..., 1].astype(np.float64), h, align, padding_mode)
    if mode == "nearest":
        taps = [(np.rint(iy).astype(np.int64), np.rint(ix).astype(np.int64), np.ones_like(ix), None, None)]
    else:
        x0, y0 = np.floor(ix), np.floor(iy)
        fx, fy = ix - x0, iy - y0
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        # (row, col, weight, d weight / d ix, d weight / d iy) of the four neighbours
        taps = [(y0, x0, (1 - fx) * (1 - fy), -(1 - fy), -(1 - fx)), (y0, x0 + 1, fx * (1 - fy), 1 - fy, -fx),
                (y0 + 1, x0, (1 - fx) * fy, -fy, 1 - fx), (y0 + 1, x0 + 1, fx * fy, fy, fx)]
    flat_x = x.reshape(n, c, h * w)
    gathered = []
    for row, col, _, _, _ in taps:
        valid = (row >= 0) & (row < h) & (col >= 0) & (col < w)
        pos = (np.clip(row, 0, h - 1) * w + np.clip(col, 0, w - 1)).reshape(n, 1, -1)
        vals = np.take_along_axis(flat_x, pos, axis=2).reshape((n, c) + row.shape[1:])
        gathered.append((vals * valid[:, None], valid, pos))
    out = sum(v * wt[:, None] for (v, _, _), (_, _, wt, _, _) in zip(gathered, taps))
    out = np.asarray(out).astype(x.dtype, copy=False)

    def backward(g):
        g64 = g.astype(np.float64)
        gx = ggrid = None
        if input._requires_grad:
            planes = (np.arange(n * c).reshape(n, c, 1) * (h * w))
            acc = np.zeros(n * c * h * w)
            for (_, valid, pos), (_, _, wt, _, _) in zip(gathered, taps):
                share = (g64 * (wt * valid)[:, None]).reshape(n, c, -1)
                acc += np.bincount((planes + pos).reshape(-1), weights=share.reshape(-1), minlength=acc.size)
            gx = acc.reshape(x.shape).astype(g.dtype)
        if grid._requires_grad:
            gix = np.zeros(ix.shape)
            giy = np.zeros(iy.shape)
            if mode == "bilinear":
                for (vals, _, _), (_, _, _, dwx, dwy) in zip(gathered, taps):
                    dot = (g64 * vals).sum(axis=1)
                    gix += dot * dwx
                    giy += dot * dwy
            ggrid = np.stack([gix * dx, giy * dy], axis=-1).astype(g.dtype)
        return gx, ggrid

    return result(out, "GridSampler2DBackward0", (input, grid), backward, saved=(input, grid))


def _check_grid(x: np.ndarray, gr: np.ndarray) -> None:
    sizes = f"input with sizes {shape_str(x.shape)} and grid with sizes {shape_str(gr.shape)}"
    if x.shape[0] != gr.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got {sizes}")
    if gr.shape[-1] != x.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {x.ndim - 2} in last dimension, but got grid "
                           f"with sizes {shape_str(gr.shape)}")
    for i in range(2, x.ndim):
        if x.shape[i] == 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial dimensions, but input has "
                               f"sizes {shape_str(x.shape)} with dimension {i} being empty")
    if x.ndim == 5 and gr.ndim == 5:
        raise NotImplementedError("grid_sample: 5-D (volumetric) input is not implemented in engine")
    want = 4 if x.ndim == 4 else 5  # torch's 2-D kernel for 4-D input, its 3-D kernel otherwise
    if x.ndim != want or gr.ndim != want:
        raise RuntimeError(
            f"grid_sampler(): expected {want}D input and grid with same number of dimensions, but got {sizes}")
