"""max_unpool1d/2d/3d (``MaxUnpool2DBackward0``/``MaxUnpool3DBackward0``) and the ``*_with_indices``
spellings of the max pools.

Unpooling scatters each input value to the flat spatial position its index names in a zero
output plane; the backward gathers the output gradient back at the same positions. The 1-D
op is the 2-D one over an appended width-1 dim, as torch records it (``SqueezeBackward1``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..._ops._core import result
from ._utils import legacy_type_name, ntuple, shape_str
from .pooling import adaptive_max_pool2d, max_pool1d, max_pool2d
from .pooling3d import adaptive_max_pool1d, max_pool3d


def _unpool_output_size(in_shape: Sequence[int], k, s, p, output_size) -> list[int]:
    """torch's ``_unpool_output_size``: the default ``(n - 1)·s + k - 2·p`` per dim, or
    ``output_size`` (the spatial sizes, optionally led by N and C) strictly within one stride."""
    n = len(k)
    default = [(in_shape[len(in_shape) - n + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(n)]
    if output_size is None:
        size = default
    else:
        if len(output_size) == n + 2:
            output_size = output_size[2:]
        size = [int(v) for v in output_size]
        if len(size) != n:
            raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has "
                             f"a length of '{len(size)}'")
        for i in range(n):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between {lo} and {hi})')
    for i in range(n):
        if size[i] < 0:
            raise ValueError("max_unpooling: output_size must contain non-negative spatial dimensions, but got "
                             f"output_size[{i}]={size[i]}")
    return size


def _unpool(input, indices, size: list[int], name: str, ndim_ok: tuple[int, int], fname: str):  # noqa: A002
    """Scatter ``input`` into zero planes of spatial ``size`` at ``indices`` (flat per plane)."""
    x, idx = input._data, indices._data
    if idx.dtype != np.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {legacy_type_name(idx.dtype)}")
    if x.ndim not in ndim_ok:
        raise RuntimeError(f"Input to {fname} should be a {ndim_ok[0]}d or {ndim_ok[1]}d Tensor, but got a tensor "
                           f"with {x.ndim} dimensions.")
    if idx.shape != x.shape:
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor ({shape_str(x.shape)}) "
                           f"but got indices tensor with shape: {shape_str(idx.shape)}")
    plane = int(np.prod(size, dtype=np.int64))
    bad = (idx < 0) | (idx >= plane)
    if bad.any():
        # torch's kernel scatters on and names the last bad index it met
        raise RuntimeError(f"Found an invalid max index: {int(idx[bad].flat[-1])} (output volumes are of size "
                           f"{'x'.join(str(v) for v in size)})")
    spatial = len(size)
    lead = x.shape[:-spatial]
    planes = int(np.prod(lead, dtype=np.int64))
    flat = (np.arange(planes, dtype=np.int64).reshape(-1, 1) * plane + idx.reshape(planes, -1)).reshape(-1)
    out = np.zeros(planes * plane, x.dtype)
    out[flat] = x.reshape(-1)  # duplicate indices: the last write wins, as in torch's CPU kernel
    x_shape = x.shape

    def backward(g):
        return (g.reshape(-1)[flat].reshape(x_shape),)

    return result(out.reshape(lead + tuple(size)), name, (input,), backward)


def _args(kernel_size, stride, padding, n: int, fname: str):
    k = ntuple(kernel_size, n, "kernel_size", fname)
    s = k if stride is None else ntuple(stride, n, "stride", fname)
    return k, s, ntuple(padding, n, "padding", fname)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of ``max_pool2d``: (N, C, H, W) or (C, H, W) values put back at their
    ``indices`` in zero planes of ``output_size`` (default ``(H - 1)·stride + k - 2·padding``)."""
    k, s, p = _args(kernel_size, stride, padding, 2, "max_unpool2d")
    size = _unpool_output_size(input.shape, k, s, p, output_size)
    return _unpool(input, indices, size, "MaxUnpool2DBackward0", (3, 4), "max_unpooling2d")


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of ``max_pool1d`` over (N, C, L) or (C, L) (the 2-D op on a width-1 dim)."""
    k, s, p = _args(kernel_size, stride, padding, 1, "max_unpool1d")
    size = _unpool_output_size(input.shape, k, s, p, output_size) + [1]
    out = _unpool(input.unsqueeze(-1), indices.unsqueeze(-1), size, "MaxUnpool2DBackward0", (3, 4),
                  "max_unpooling2d")
    return out.squeeze(-1)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):  # noqa: A002
    """The partial inverse of ``max_pool3d`` over (N, C, D, H, W) or (C, D, H, W)."""
    k, s, p = _args(kernel_size, stride, padding, 3, "max_unpool3d")
    size = _unpool_output_size(input.shape, k, s, p, output_size)
    return _unpool(input, indices, size, "MaxUnpool3DBackward0", (4, 5), "max_unpooling3d")


# --- the *_with_indices spellings: the pools with return_indices=True -------------------------

def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool1d(..., return_indices=True)``: (values, int64 positions along L)."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool2d(..., return_indices=True)``: (values, flat ``h·W + w`` indices)."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
                            ceil_mode: bool = False, return_indices: bool = False):
    """``max_pool3d(..., return_indices=True)``: (values, flat ``(d·H + h)·W + w`` indices)."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """``adaptive_max_pool1d(..., return_indices=True)``."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = False):  # noqa: A002
    """``adaptive_max_pool2d(..., return_indices=True)``."""
    return adaptive_max_pool2d(input, output_size, True)
