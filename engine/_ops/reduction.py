"""Reductions (sum, mean, var, std, max/min, amax/amin, norm, logsumexp) and softmax.

Backward of a reduction broadcasts the gradient back over the reduced dims; ``_expand_back``
re-inserts them when ``keepdim=False``. Max/min spread the gradient evenly over ties when
reducing everything (torch's ``evenly_distribute_backward``) and to the returned index along
a dim.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

from . import _core
from ._core import float_like, multi_result, result, wrap_dim, wrap_dims

# torch.return_types equivalents: ``values, indices = x.max(1)`` and ``.values`` both work.
max_result = namedtuple("max", ["values", "indices"])
min_result = namedtuple("min", ["values", "indices"])


def _expand_back(g: np.ndarray, shape: tuple, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    if not keepdim:
        g = np.expand_dims(g, dims) if dims else g
    return np.broadcast_to(g, shape)


def _count(shape: tuple, dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def sum(a, dim=None, keepdim: bool = False, dtype=None):  # noqa: A001
    x = a._data
    dims = wrap_dims(dim, x.ndim)
    out_dtype = _core._dtype.to_numpy_dtype(dtype) if dtype is not None else (
        np.dtype(np.int64) if x.dtype.kind in "biu" else x.dtype)
    out = np.asarray(np.sum(x, axis=dims, keepdims=keepdim, dtype=out_dtype))
    shape = x.shape
    name = "SumBackward0" if dim is None else "SumBackward1"
    return result(out, name, (a,), lambda g: (_expand_back(g, shape, dims, keepdim),))


def mean(a, dim=None, keepdim: bool = False, dtype=None):
    x = a._data
    if dtype is not None:
        x = x.astype(_core._dtype.to_numpy_dtype(dtype))
    if x.dtype.kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_core._dtype.from_numpy_dtype(x.dtype).name}"
        )
    dims = wrap_dims(dim, x.ndim)
    out = np.asarray(np.mean(x, axis=dims, keepdims=keepdim))
    shape, n = x.shape, _count(x.shape, dims)
    name = "MeanBackward0" if dim is None else "MeanBackward1"

    def backward(g):
        return (_expand_back(g / np.asarray(n, g.dtype), shape, dims, keepdim),)

    return result(out, name, (a,), backward)


def _correction(unbiased, correction) -> float:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def var(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    c = _correction(unbiased, correction)
    n = _count(x.shape, dims)
    centred = x - x.mean(axis=dims, keepdims=True)
    out = np.asarray(np.sum(centred * centred, axis=dims, keepdims=keepdim) / builtins.max(n - c, 0))

    def backward(g):
        return (_expand_back(g, x.shape, dims, keepdim) * centred * (2 / (n - c)),)

    return result(out, "VarBackward0", (a,), backward, saved=(a,))


def std(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    c = _correction(unbiased, correction)
    n = _count(x.shape, dims)
    centred = x - x.mean(axis=dims, keepdims=True)
    out = np.asarray(np.sqrt(np.sum(centred * centred, axis=dims, keepdims=keepdim) / builtins.max(n - c, 0)))

    def backward(g):
        denom = _expand_back(out, x.shape, dims, keepdim) * (n - c)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (_expand_back(g, x.shape, dims, keepdim) * centred / denom,)

    return result(out, "StdBackward0", (a,), backward, saved=(a,), save_output=True)


def _extreme(a, dim, keepdim, find, arg_find, names, wrap):
    x = a._data
    if dim is None:
        if x.size == 0:
            raise RuntimeError(
                f"{names[2]}(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument."
            )
        out = np.asarray(find(x))

        def backward_all(g):
            ties = x == out
            return (ties * (g / ties.sum()).astype(g.dtype),)

        return result(out, names[1], (a,), backward_all, saved=(a,), save_output=True)
    d = wrap_dim(dim, x.ndim)
    idx = np.expand_dims(arg_find(x, axis=d), d) if x.ndim else np.zeros((), np.int64)
    values = np.take_along_axis(x, idx, axis=d) if x.ndim else x.copy()
    if not keepdim and x.ndim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    idx = idx.astype(np.int64)

    def backward_dim(g, _gi):
        gx = np.zeros(x.shape, g.dtype)
        gi = idx if keepdim or not x.ndim else np.expand_dims(idx, d)
        gg = g if keepdim or not x.ndim else np.expand_dims(g, d)
        if x.ndim:
            np.put_along_axis(gx, gi, gg, axis=d)
        else:
            gx[...] = g
        return (gx,)

    v, i = multi_result([values, idx], names[0], (a,), backward_dim, differentiable=(True, False))
    return wrap(v, i)


def max(a, dim=None, keepdim: bool = False):  # noqa: A001
    """``max()`` of everything, ``max(dim)`` -> (values, indices), ``max(other)`` -> maximum."""
    if isinstance(dim, _core._Tensor):
        from .pointwise import maximum
        return maximum(a, dim)
    return _extreme(a, dim, keepdim, np.max, np.argmax, ("MaxBackward0", "MaxBackward1", "max"),
                    max_result)


def min(a, dim=None, keepdim: bool = False):  # noqa: A001
    if isinstance(dim, _core._Tensor):
        from .pointwise import minimum
        return minimum(a, dim)
    return _extreme(a, dim, keepdim, np.min, np.argmin, ("MinBackward0", "MinBackward1", "min"),
                    min_result)


def _amax_like(name, find):
    def op(a, dim=(), keepdim: bool = False):
        x = a._data
        dims = wrap_dims(dim if dim != () else None, x.ndim)
        out = np.asarray(find(x, axis=dims, keepdims=keepdim))

        def backward(g):
            full = _expand_back(out, x.shape, dims, keepdim)
            ties = (x == full)
            count = ties.sum(axis=dims, keepdims=True)
            return (_expand_back(g, x.shape, dims, keepdim) * ties / count,)

        return result(out, name, (a,), backward, saved=(a,), save_output=True)

    return op


amax = _amax_like("AmaxBackward0", np.max)
amin = _amax_like("AminBackward0", np.min)


def argmax(a, dim=None, keepdim: bool = False):
    return _arg(a, dim, keepdim, np.argmax)


def argmin(a, dim=None, keepdim: bool = False):
    return _arg(a, dim, keepdim, np.argmin)


def _arg(a, dim, keepdim, fn):
    x = a._data
    if dim is None:
        out = np.asarray(fn(x), dtype=np.int64)
        return _core._Tensor._wrap(out.reshape((1,) * x.ndim) if keepdim else out)
    d = wrap_dim(dim, x.ndim)
    out = fn(x, axis=d, keepdims=keepdim).astype(np.int64) if x.ndim else np.zeros((), np.int64)
    return _core._Tensor._wrap(np.asarray(out))


def softmax(a, dim: int, dtype=None):
    x = float_like(a._data)
    if dtype is not None:
        x = x.astype(_core._dtype.to_numpy_dtype(dtype))
    d = wrap_dim(dim, x.ndim)
    with np.errstate(invalid="ignore"):  # a fully masked (all -inf) row is NaN, silently, as in torch
        e = np.exp(x - x.max(axis=d, keepdims=True))
        out = e / e.sum(axis=d, keepdims=True)

    def backward(g):
        return (out * (g - (g * out).sum(axis=d, keepdims=True)),)

    return result(out, "SoftmaxBackward0", (a,), backward, save_output=True)


def log_softmax(a, dim: int, dtype=None):
    x = float_like(a._data)
    if dtype is not None:
        x = x.astype(_core._dtype.to_numpy_dtype(dtype))
    d = wrap_dim(dim, x.ndim)
    with np.errstate(invalid="ignore", divide="ignore"):
        shifted = x - x.max(axis=d, keepdims=True)
        out = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))

    def backward(g):
        return (g - np.exp(out) * g.sum(axis=d, keepdims=True),)

    return result(out, "LogSoftmaxBackward0", (a,), backward, save_output=True)


def logsumexp(a, dim, keepdim: bool = False):
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    m = x.max(axis=dims, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    out = np.asarray(np.log(np.exp(x - m).sum(axis=dims, keepdims=True)) + m)
    if not keepdim:
        out = out.squeeze(dims) if dims else out

    def backward(g):
        full = _expand_back(out, x.shape, dims, keepdim)
        return (_expand_back(g, x.shape, dims, keepdim) * np.exp(x - full),)

    return result(out, "LogsumexpBackward0", (a,), backward, saved=(a,), save_output=True)


def norm(a, p=2, dim=None, keepdim: bool = False):
    """Vector p-norm (``p`` a number, ``inf`` included) over ``dim`` (all dims by default)."""
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    ax = np.abs(x)
    if p == float("inf"):
        out = np.asarray(ax.max(axis=dims, keepdims=keepdim))
    elif p == 2:
        out = np.asarray(np.sqrt((x * x).sum(axis=dims, keepdims=keepdim)))
    else:
        out = np.asarray((ax ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p))

    def backward(g):
        full = _expand_back(out, x.shape, dims, keepdim)
        gg = _expand_back(g, x.shape, dims, keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == float("inf"):
                ties = ax == full
                grad = gg * np.sign(x) * ties / ties.sum(axis=dims, keepdims=True)
            elif p == 2:
                grad = np.where(full == 0, 0, gg * x / full)
            else:
                grad = np.where(full == 0, 0, gg * np.sign(x) * ax ** (p - 1) / full ** (p - 1))
        return (grad.astype(x.dtype, copy=False),)

    return result(out, "LinalgVectorNormBackward0", (a,), backward, saved=(a,), save_output=True)


def prod(a, dim=None, keepdim: bool = False):
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    out = np.asarray(np.prod(x, axis=dims, keepdims=keepdim))

    def backward(g):
        # Product of all the others, computed without dividing (zeros are common in masks).
        gg = _expand_back(g, x.shape, dims, keepdim)
        moved = np.moveaxis(x, dims, tuple(range(-len(dims), 0))) if dims else x
        flat = moved.reshape(moved.shape[: moved.ndim - len(dims)] + (-1,))
        ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
        left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
        right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
        others = (left * right).reshape(moved.shape)
        others = np.moveaxis(others, tuple(range(-len(dims), 0)), dims) if dims else others
        return (gg * others,)

    name = "ProdBackward0" if dim is None else "ProdBackward1"
    return result(out, name, (a,), backward, saved=(a,), save_output=True)


def _no_grad_reduce(fn):
    def op(a, dim=None, keepdim: bool = False):
        x = a._data
        dims = wrap_dims(dim, x.ndim)
        return _core._Tensor._wrap(np.asarray(fn(x, axis=dims, keepdims=keepdim)))

    return op


all = _no_grad_reduce(np.all)  # noqa: A001
any = _no_grad_reduce(np.any)  # noqa: A001
