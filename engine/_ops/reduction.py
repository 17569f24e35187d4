"""Reductions (sum, mean, var, std, max/min, amax/amin, norm, logsumexp, median, ...), scans
(cumsum, cumprod) and softmax.

Backward of a reduction broadcasts the gradient back over the reduced dims; ``_expand_back``
re-inserts them when ``keepdim=False``. Max/min spread the gradient evenly over ties when
reducing everything (torch's ``evenly_distribute_backward``) and to the returned index along
a dim.

dtype rules follow torch: sum/prod/cumsum/cumprod/nansum of integer or bool inputs give int64,
mean/var/std/norm/softmax want floating inputs (error otherwise), all/any give bool (uint8 for
uint8 inputs). A 0-dim tensor accepts ``dim`` 0 or -1 and reduces nothing.
"""

from __future__ import annotations

import builtins
from collections import namedtuple

import numpy as np

import engine._ops._core as _core

from .._errstate import quiet
from ._core import float_like, multi_result, result, wrap_dim
from .pointwise import maximum, minimum

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["all", "amax", "amin", "aminmax", "any", "argmax", "argmin", "count_nonzero", "cumprod", "cumsum",
           "log_softmax", "logsumexp", "max", "mean", "median", "min", "nansum", "norm", "prod", "softmax", "std",
           "std_mean", "sum", "var", "var_mean"]

# torch.return_types equivalents: ``values, indices = x.max(1)`` and ``.values`` both work.
max_result = namedtuple("max", ["values", "indices"])
min_result = namedtuple("min", ["values", "indices"])
median_result = namedtuple("median", ["values", "indices"])
aminmax_result = namedtuple("aminmax", ["min", "max"])

_INF = float("inf")
_INT = (int, np.integer)


def _type_name(np_dtype) -> str:
    return _core._dtype.scalar_type_name(np_dtype)


def _np_dtype(dtype) -> np.dtype:
    return _core._dtype.to_numpy_dtype(dtype)


def wrap_dims(dim, ndim: int) -> tuple[int, ...]:
    """NumPy axes for ``dim``: ``None`` or an empty list mean every dim; a 0-dim tensor accepts
    0/-1 and reduces nothing. Out-of-range and repeated dims raise torch's errors."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, _INT):
        d = wrap_dim(dim, ndim)
        return (d,) if ndim else ()
    if not len(dim):
        return tuple(range(ndim))
    dims = tuple([wrap_dim(d, ndim) for d in dim])
    if len(set(dims)) != len(dims):
        seen = set()
        for d in dims:
            if d in seen:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
            seen.add(d)
    return dims if ndim else ()


def _one_dim(dim, ndim: int) -> int | None:
    """A single wrapped dim (``None`` for a 0-dim tensor, whose dim 0/-1 reduces nothing)."""
    d = wrap_dim(dim, ndim)
    return d if ndim else None


def _expand_back(g: np.ndarray, shape: tuple, dims: tuple[int, ...], keepdim: bool) -> np.ndarray:
    if not keepdim:
        g = np.expand_dims(g, dims) if dims else g
    return np.broadcast_to(g, shape)


def _kept_shape(shape: tuple, dims: tuple[int, ...]) -> tuple[int, ...]:
    """``shape`` reduced over ``dims`` with ``keepdim=True``: a reduced gradient reshaped to it
    broadcasts back over the input."""
    return tuple(1 if i in dims else n for i, n in enumerate(shape))


def _count(shape: tuple, dims: tuple[int, ...]) -> int:
    n = 1
    for d in dims:
        n *= shape[d]
    return n


def _no_int_autograd(a, out_dtype: np.dtype) -> None:
    """torch refuses to record a graph whose output is not floating (``sum(dtype=long)``)."""
    if out_dtype.kind != "f" and _core.needs_graph(a):
        raise RuntimeError(f"Autograd not support dtype: {_type_name(out_dtype)}")


def _as_input_grad(g: np.ndarray, x_dtype: np.dtype) -> np.ndarray:
    return g if g.dtype == x_dtype else g.astype(x_dtype)


def _empty_dim_error(name: str, d, sep: str = "():") -> IndexError:
    return IndexError(f"{name}{sep} Expected reduction dim {d} to have non-zero size.")


def _numel_zero_error(name: str) -> RuntimeError:
    return RuntimeError(
        f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
        "Specify the reduction dim with the 'dim' argument."
    )


# --- sum / mean / prod / nansum -----------------------------------------------------------------


def _accumulated(a, dtype) -> tuple[np.ndarray, np.dtype | None]:
    """The values a sum or product runs over, and the ``dtype=`` it accumulates in: torch casts
    the input to ``dtype`` first, and takes integers and bools as int64 when none is given."""
    x = a._data
    if dtype is not None:
        acc = _np_dtype(dtype)
        _no_int_autograd(a, acc)
        return (x if acc == x.dtype else x.astype(acc)), acc
    return (x.astype(np.int64) if x.dtype.kind in "biu" else x), None


def sum(a, dim=None, keepdim: bool = False, dtype=None):  # noqa: A001
    dims = wrap_dims(dim, a._data.ndim)
    x, acc = _accumulated(a, dtype)
    # what np.sum runs for an ndarray, without its Python-level dispatch (a per-op cost)
    out = np.asarray(np.add.reduce(x, axis=dims, dtype=acc, keepdims=keepdim))
    shape, in_dtype = x.shape, a._data.dtype
    name = "SumBackward0" if dim is None else "SumBackward1"

    def backward(g):
        return (_as_input_grad(_expand_back(g, shape, dims, keepdim), in_dtype),)

    return result(out, name, (a,), backward, tensor_backward=_core.linear_backward(
        name, backward, lambda arr: np.asarray(np.sum(arr, axis=dims, keepdims=keepdim))))


def nansum(a, dim=None, keepdim: bool = False, dtype=None):
    x = a._data
    dims = wrap_dims(dim, x.ndim)
    acc = None
    if dtype is not None:
        acc = _np_dtype(dtype)
        _no_int_autograd(a, acc)
        x = x.astype(acc)
    elif x.dtype.kind in "biu":
        x = x.astype(np.int64)
    out = np.asarray(np.nansum(x, axis=dims, keepdims=keepdim, dtype=acc))
    shape, in_dtype = x.shape, a._data.dtype

    def backward(g):
        gx = _expand_back(g, shape, dims, keepdim) * ~np.isnan(x)
        return (_as_input_grad(gx, in_dtype),)

    return result(out, "NansumBackward0", (a,), backward, saved=(a,))


def mean(a, dim=None, keepdim: bool = False, dtype=None):
    x = a._data
    if dtype is not None:
        nd = _np_dtype(dtype)
        if nd.kind != "f":
            raise RuntimeError(
                "mean(): could not infer output dtype. Optional dtype must be either a floating "
                f"point or complex dtype. Got: {_type_name(nd)}"
            )
        x = x.astype(nd)
    elif x.dtype.kind != "f":
        raise RuntimeError(
            "mean(): could not infer output dtype. Input dtype must be either a floating point "
            f"or complex dtype. Got: {_type_name(x.dtype)}"
        )
    dims = wrap_dims(dim, x.ndim)
    shape, n = x.shape, _count(x.shape, dims)
    if x.size:
        out = np.asarray(np.mean(x, axis=dims, keepdims=keepdim))
    else:  # torch: NaN where nothing is averaged, without NumPy's "Mean of empty slice" warning
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.asarray(np.sum(x, axis=dims, keepdims=keepdim) / x.dtype.type(n))
    name = "MeanBackward0" if dim is None else "MeanBackward1"
    in_dtype = a._data.dtype

    def backward(g):
        return (_as_input_grad(_expand_back(g / np.asarray(n, g.dtype), shape, dims, keepdim), in_dtype),)

    def adjoint(arr):
        return np.asarray(np.sum(arr, axis=dims, keepdims=keepdim) / np.asarray(n, arr.dtype))

    return result(out, name, (a,), backward, tensor_backward=_core.linear_backward(name, backward, adjoint))


def _others_product(x: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    """For each element, the product of all the others over ``dims`` (no division: zeros are
    common in masks)."""
    moved = np.moveaxis(x, dims, tuple(range(-len(dims), 0))) if dims else x
    flat = moved.reshape(moved.shape[: moved.ndim - len(dims)] + (-1,))
    ones = np.ones(flat.shape[:-1] + (1,), x.dtype)
    left = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    right = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    others = (left * right).reshape(moved.shape)
    return np.moveaxis(others, tuple(range(-len(dims), 0)), dims) if dims else others


def prod(a, dim=None, keepdim: bool = False, dtype=None):
    _core.no_complex("prod", a._data)
    dims = wrap_dims(dim, a._data.ndim)
    x, acc = _accumulated(a, dtype)
    out = np.asarray(np.prod(x, axis=dims, keepdims=keepdim, dtype=acc))
    in_dtype = a._data.dtype

    def backward(g):
        gg = _expand_back(g, x.shape, dims, keepdim)
        return (_as_input_grad(gg * _others_product(x, dims), in_dtype),)

    name = "ProdBackward0" if dim is None else "ProdBackward1"
    return result(out, name, (a,), backward, saved=(a,), save_output=True)


# --- var / std -----------------------------------------------------------------------------------


def _correction(unbiased, correction) -> float:
    if correction is not None:
        return correction
    return 1 if unbiased is None or unbiased else 0


def _moments(a, dim, unbiased, correction, name):
    """(x, dims, n - correction, centred, sum of squares) for var/std and friends."""
    x = a._data
    if x.dtype.kind != "f":
        raise RuntimeError(f"{name} only support floating point and complex dtypes")
    dims = wrap_dims(dim, x.ndim)
    dof = _count(x.shape, dims) - _correction(unbiased, correction)
    if x.size and dof > 0:
        centred = x - x.mean(axis=dims, keepdims=True)
        return x, dims, dof, centred
    # torch: no error for too few elements, just inf/NaN (and a warning we leave out)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.sum(x, axis=dims, keepdims=True) / x.dtype.type(_count(x.shape, dims))
    return x, dims, dof, x - m


def _var_from(centred, dims, dof, keepdim):
    ss = np.sum(centred * centred, axis=dims, keepdims=keepdim)
    if dof > 0:
        return np.asarray(ss / dof)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(ss / ss.dtype.type(0))


def _scale(dof, dtype):
    with np.errstate(divide="ignore"):
        return dtype.type(2) / dtype.type(builtins.max(dof, 0))


def var(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    x, dims, dof, centred = _moments(a, dim, unbiased, correction, "std and var")
    out = _var_from(centred, dims, dof, keepdim)

    def backward(g):
        with np.errstate(invalid="ignore"):
            return (_expand_back(g, x.shape, dims, keepdim) * centred * _scale(dof, x.dtype),)

    kept = _kept_shape(x.shape, dims)

    def tensor_backward(g):
        return (g.reshape(kept) * (a - mean(a, dims, True)) * float(_scale(dof, x.dtype)),)

    return result(out, "VarBackward0", (a,), backward, saved=(a,), tensor_backward=tensor_backward)


def std(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    x, dims, dof, centred = _moments(a, dim, unbiased, correction, "std and var")
    out = np.sqrt(_var_from(centred, dims, dof, keepdim))

    def backward(g):
        denom = _expand_back(out, x.shape, dims, keepdim) * x.dtype.type(builtins.max(dof, 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            return (_expand_back(g, x.shape, dims, keepdim) * centred / denom,)

    kept = _kept_shape(x.shape, dims)

    def tensor_backward(g):
        y = _core.saved_output(out).reshape(kept)
        return (g.reshape(kept) * (a - mean(a, dims, True)) / (y * float(builtins.max(dof, 0))),)

    return result(out, "StdBackward0", (a,), backward, saved=(a,), save_output=True,
                  tensor_backward=tensor_backward)


def _stat_mean(a, dim, unbiased, keepdim, correction, take_sqrt):
    name = "std_mean" if take_sqrt else "var_mean"
    x, dims, dof, centred = _moments(a, dim, unbiased, correction, name)
    v = _var_from(centred, dims, dof, keepdim)
    out = np.sqrt(v) if take_sqrt else v
    n = _count(x.shape, dims)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.asarray(np.sum(x, axis=dims, keepdims=keepdim) / x.dtype.type(n))

    def backward(g_stat, g_mean):
        with np.errstate(divide="ignore", invalid="ignore"):
            if take_sqrt:
                denom = _expand_back(out, x.shape, dims, keepdim) * x.dtype.type(builtins.max(dof, 0))
                gx = _expand_back(g_stat, x.shape, dims, keepdim) * centred / denom
            else:
                gx = _expand_back(g_stat, x.shape, dims, keepdim) * centred * _scale(dof, x.dtype)
            gx = gx + _expand_back(g_mean / x.dtype.type(n), x.shape, dims, keepdim)
        return (gx,)

    node_name = "StdMeanBackward0" if take_sqrt else "VarMeanBackward0"
    s, mu = multi_result([out, m], node_name, (a,), backward, saved=(a,))
    return s, mu


def var_mean(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _stat_mean(a, dim, unbiased, keepdim, correction, take_sqrt=False)


def std_mean(a, dim=None, unbiased=None, keepdim: bool = False, *, correction=None):
    return _stat_mean(a, dim, unbiased, keepdim, correction, take_sqrt=True)


# --- max / min / amax / amin / aminmax / argmax / argmin / median -------------------------------


def _select_backward(shape: tuple, idx: np.ndarray, d: int | None, keepdim: bool):
    """Gradient of picking ``idx`` along dim ``d``: the incoming grad lands on the picked slots."""
    def backward(g, *_ignored):
        if d is None:  # 0-dim input
            return (np.array(g, copy=True).reshape(shape),)
        gx = np.zeros(shape, g.dtype)
        gi = idx if keepdim else np.expand_dims(idx, d)
        gg = g if keepdim else np.expand_dims(g, d)
        np.put_along_axis(gx, gi, gg, axis=d)
        return (gx,)

    return backward


def _evenly(x: np.ndarray, out: np.ndarray):
    """Backward of a full reduction that picks a value (max, min, median): the grad is shared
    evenly by every element equal to it (NaN counting as equal to NaN)."""
    def backward(g):
        ties = x == out
        if out.dtype.kind == "f" and np.isnan(out):
            ties = np.isnan(x)
        return (ties * (g / ties.sum()).astype(g.dtype),)

    return backward


def _extreme(a, dim, keepdim, find, arg_find, names, wrap):
    x = a._data
    if dim is None:
        if x.size == 0:
            raise _numel_zero_error(names[2])
        out = np.asarray(find(x))

        def backward_all(g):
            ties = x == out
            if out.dtype.kind == "f" and out != out:  # NaN: shared by the NaNs
                ties = np.isnan(x)
            return (ties * (g / ties.sum()).astype(g.dtype),)

        return result(out, names[1], (a,), backward_all, saved=(a,), save_output=True)
    d = wrap_dim(dim, x.ndim)
    if not x.ndim:
        d, values, idx = None, x.copy(), np.zeros((), np.int64)
    else:
        if not x.shape[d]:
            raise _empty_dim_error(names[2], d)
        idx = np.expand_dims(arg_find(x, axis=d), d)
        values = np.take_along_axis(x, idx, axis=d)
        if not keepdim:
            values, idx = values.squeeze(d), idx.squeeze(d)
        idx = idx.astype(np.int64, copy=False)
    v, i = multi_result([values, idx], names[0], (a,), _select_backward(x.shape, idx, d, keepdim),
                        differentiable=(True, False))
    return wrap(v, i)


def max(a, dim=None, keepdim: bool = False):  # noqa: A001
    """``max()`` of everything, ``max(dim)`` -> (values, indices), ``max(other)`` -> maximum."""
    if isinstance(dim, _core.Tensor):
        return maximum(a, dim)
    return _extreme(a, dim, keepdim, np.max, np.argmax, ("MaxBackward0", "MaxBackward1", "max"),
                    max_result)


def min(a, dim=None, keepdim: bool = False):  # noqa: A001
    if isinstance(dim, _core.Tensor):
        return minimum(a, dim)
    return _extreme(a, dim, keepdim, np.min, np.argmin, ("MinBackward0", "MinBackward1", "min"),
                    min_result)


def _check_nonempty_dims(name: str, x: np.ndarray, dim) -> None:
    """amax/amin of an empty tensor: torch's errors (checked before repeated dims)."""
    if dim is None or (not isinstance(dim, _INT) and not len(dim)):
        raise _numel_zero_error(name)
    for r in [dim] if isinstance(dim, _INT) else list(dim):
        if x.shape[wrap_dim(r, x.ndim)] == 0:
            raise _empty_dim_error(name, r)


def _ties_backward(x, out, dims, keepdim):
    """amax/amin: the grad is shared evenly among the elements equal to the extreme."""
    def backward(g):
        full = _expand_back(out, x.shape, dims, keepdim)
        ties = x == full
        count = ties.sum(axis=dims, keepdims=True)
        return (_expand_back(g, x.shape, dims, keepdim) * ties / count.astype(g.dtype),)

    return backward


def _amax_like(name, find):
    short = name[:4].lower()

    def op(a, dim=(), keepdim: bool = False):
        x = a._data
        if not x.size:
            _check_nonempty_dims(short, x, dim)
        dims = wrap_dims(dim, x.ndim)
        out = np.asarray(find(x, axis=dims, keepdims=keepdim))
        return result(out, name, (a,), _ties_backward(x, out, dims, keepdim), saved=(a,),
                      save_output=True)

    return op


amax = _amax_like("AmaxBackward0", np.max)
amin = _amax_like("AminBackward0", np.min)


def aminmax(a, *, dim=None, keepdim: bool = False):
    x = a._data
    if dim is None:
        if not x.size:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                               "operation has no identity.")
        dims = tuple(range(x.ndim))
    else:
        d = _one_dim(dim, x.ndim)
        if d is not None and x.shape[d] == 0:
            raise _empty_dim_error("aminmax", d, sep=":")
        dims = () if d is None else (d,)
    lo = np.asarray(np.min(x, axis=dims, keepdims=keepdim))
    hi = np.asarray(np.max(x, axis=dims, keepdims=keepdim))
    lo_back, hi_back = _ties_backward(x, lo, dims, keepdim), _ties_backward(x, hi, dims, keepdim)

    def backward(g_lo, g_hi):
        return (lo_back(g_lo)[0] + hi_back(g_hi)[0],)

    mn, mx = multi_result([lo, hi], "AminmaxBackward0", (a,), backward, saved=(a,))
    return aminmax_result(mn, mx)


def argmax(a, dim=None, keepdim: bool = False):
    return _arg(a, dim, keepdim, np.argmax, "argmax")


def argmin(a, dim=None, keepdim: bool = False):
    return _arg(a, dim, keepdim, np.argmin, "argmin")


def _arg(a, dim, keepdim, fn, name):
    x = a._data
    if x.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        if x.size == 0:
            raise IndexError(f"{name}(): Expected reduction dim to be specified for input.numel() == 0.")
        out = np.asarray(fn(x), dtype=np.int64)
        return _core.Tensor._wrap(out.reshape((1,) * x.ndim) if keepdim else out)
    d = _one_dim(dim, x.ndim)
    if d is None:
        return _core.Tensor._wrap(np.zeros((), np.int64))
    if x.shape[d] == 0:
        raise _empty_dim_error(name, d)
    return _core.Tensor._wrap(np.asarray(fn(x, axis=d, keepdims=keepdim)).astype(np.int64, copy=False))


def median(a, dim=None, keepdim: bool = False):
    """The lower of the two middle values (torch's median), or (values, indices) along ``dim``."""
    x = a._data
    if dim is None:
        if x.dtype.kind == "b":
            raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
        flat = x.reshape(-1)
        if flat.size == 0 and x.dtype.kind != "f":  # torch returns an unspecified value here
            out = np.asarray(np.iinfo(x.dtype).min, x.dtype)
        elif flat.size == 0 or (x.dtype.kind == "f" and np.isnan(flat).any()):
            out = np.asarray(np.nan, x.dtype)
        else:
            k = (flat.size - 1) // 2
            out = np.asarray(np.partition(flat, k)[k])
        return result(out, "MedianBackward0", (a,), _evenly(x, out), saved=(a,), save_output=True)
    d = _one_dim(dim, x.ndim)
    if d is not None and x.shape[d] == 0:
        raise _empty_dim_error("median", d)
    if x.dtype.kind == "b":
        raise NotImplementedError("\"median_out\" not implemented for 'Bool'")
    if d is None:
        values, idx = x.copy(), np.zeros((), np.int64)
    else:
        n = x.shape[d]
        order = np.argsort(x, axis=d, kind="stable")  # NaNs sort last, in their original order
        pos_shape = x.shape[:d] + (1,) + x.shape[d + 1:]
        if x.dtype.kind == "f":  # a row with NaN has median NaN, at its first NaN
            nans = np.isnan(x).sum(axis=d, keepdims=True)
            pos = np.where(nans > 0, n - nans, (n - 1) // 2)
        else:
            pos = np.full(pos_shape, (n - 1) // 2)
        idx = np.take_along_axis(order, pos, axis=d).astype(np.int64, copy=False)
        values = np.take_along_axis(x, idx, axis=d)
        if not keepdim:
            values, idx = values.squeeze(d), idx.squeeze(d)
    v, i = multi_result([values, idx], "MedianBackward1", (a,), _select_backward(x.shape, idx, d, keepdim),
                        differentiable=(True, False))
    return median_result(v, i)


# --- softmax / log_softmax / logsumexp -----------------------------------------------------------


def _softmax_error(kernel, x, d) -> NotImplementedError:
    where = "lastdim_kernel_impl" if d == builtins.max(x.ndim, 1) - 1 else "kernel_impl"
    return NotImplementedError(f"\"{kernel}_{where}\" not implemented for '{_type_name(x.dtype)}'")


def softmax(a, dim: int, dtype=None):
    x = a._data
    if dtype is not None:
        x = x.astype(_np_dtype(dtype))
    d = wrap_dim(dim, x.ndim)
    if x.dtype.kind != "f" and x.size:
        raise _softmax_error("softmax", x, d)
    if not x.ndim or not x.size:
        out = np.ones_like(x)
    else:
        with quiet():  # a fully masked (all -inf) row is NaN, silently, as in torch
            e = np.exp(x - x.max(axis=d, keepdims=True))
            out = e / e.sum(axis=d, keepdims=True)
    in_dtype = a._data.dtype

    def backward(g):
        return (_as_input_grad(out * (g - (g * out).sum(axis=d, keepdims=True)), in_dtype),)

    def tensor_backward(g):
        s = _core.saved_output(out)
        return (s * (g - sum(g * s, d, True)),)

    return result(out, "SoftmaxBackward0", (a,), backward, save_output=True,
                  tensor_backward=tensor_backward if dtype is None else None)


def log_softmax(a, dim: int, dtype=None):
    x = a._data
    if dtype is not None:
        x = x.astype(_np_dtype(dtype))
    d = wrap_dim(dim, x.ndim)
    if x.dtype.kind != "f" and x.size:
        raise _softmax_error("log_softmax", x, d)
    if not x.ndim or not x.size:
        out = np.zeros_like(x)
    else:
        with quiet():
            shifted = x - x.max(axis=d, keepdims=True)
            out = shifted - np.log(np.exp(shifted).sum(axis=d, keepdims=True))
    in_dtype = a._data.dtype

    def backward(g):
        return (_as_input_grad(g - np.exp(out) * g.sum(axis=d, keepdims=True), in_dtype),)

    def tensor_backward(g):
        return (g - _core.saved_output(out).exp() * sum(g, d, True),)

    return result(out, "LogSoftmaxBackward0", (a,), backward, save_output=True,
                  tensor_backward=tensor_backward if dtype is None else None)


def logsumexp(a, dim, keepdim: bool = False):
    x = float_like(a._data)
    dims = wrap_dims(dim, x.ndim)
    if x.size == 0:
        with np.errstate(divide="ignore"):
            out = np.asarray(np.log(np.exp(x).sum(axis=dims, keepdims=keepdim)))
    else:
        m = x.max(axis=dims, keepdims=True)
        m = np.where(np.isfinite(m), m, 0)
        out = np.asarray(np.log(np.exp(x - m).sum(axis=dims, keepdims=True)) + m)
        if not keepdim:
            out = out.squeeze(dims) if dims else out

    def backward(g):
        full = _expand_back(out, x.shape, dims, keepdim)
        return (_expand_back(g, x.shape, dims, keepdim) * np.exp(x - full),)

    kept = _kept_shape(x.shape, dims)

    def tensor_backward(g):
        return (g.reshape(kept) * (a - logsumexp(a, dims, True)).exp(),)

    return result(out, "LogsumexpBackward0", (a,), backward, saved=(a,), save_output=True,
                  tensor_backward=tensor_backward)


# --- norm ------------------------------------------------------------------------------------------


def norm(a, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """torch.norm: vector p-norms (any real ``p``, ``inf``/``-inf``, 0 = count of non-zeros,
    ``'fro'`` = 2) over ``dim`` (all dims by default), and the nuclear norm ``'nuc'``."""
    if isinstance(p, str):
        if p == "nuc":
            return _nuclear_norm(a, dim, keepdim, dtype)
        if p != "fro":
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        p = 2
    x = a._data
    if x.dtype.kind != "f":
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(x.dtype)}")
    if dtype is not None:
        x = x.astype(_np_dtype(dtype))
    dims = wrap_dims(dim, x.ndim)
    p = builtins.float(p)
    if p == 2:
        out = np.asarray(np.sqrt((x * x).sum(axis=dims, keepdims=keepdim)))
    else:
        ax = np.abs(x)
        if not x.size and (p < 0 or p == _INF):
            _no_identity_check(x, p, dim, dims)
        if p == _INF or p == -_INF:
            out = np.asarray((ax.max if p > 0 else ax.min)(axis=dims, keepdims=keepdim))
        elif p == 0:
            out = np.asarray((x != 0).sum(axis=dims, keepdims=keepdim, dtype=x.dtype))
        elif p == 1:
            out = np.asarray(ax.sum(axis=dims, keepdims=keepdim))
        else:
            with np.errstate(divide="ignore"):
                out = np.asarray((ax ** p).sum(axis=dims, keepdims=keepdim) ** (1.0 / p))
    in_dtype = a._data.dtype

    def backward(g):
        gg = _expand_back(g, x.shape, dims, keepdim)
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 0:
                return (None,)
            if p == 2:
                full = _expand_back(out, x.shape, dims, keepdim)
                grad = np.where(full == 0, 0, gg * x / full)
            elif p == 1:
                grad = gg * np.sign(x)
            elif p == _INF or p == -_INF:
                full = _expand_back(out, x.shape, dims, keepdim)
                ties = np.abs(x) == full
                grad = gg * np.sign(x) * ties / ties.sum(axis=dims, keepdims=True)
            else:
                full = _expand_back(out, x.shape, dims, keepdim)
                ax_ = np.abs(x)
                grad = np.where((full == 0) | (x == 0), 0,
                                gg * np.sign(x) * ax_ ** (p - 1) / full ** (p - 1))
        return (grad.astype(in_dtype, copy=False),)

    kept = _kept_shape(x.shape, dims)

    def tensor_backward(g):
        gg = g.reshape(kept)
        if p == 1:
            return (_core.masked(gg.expand(x.shape), np.sign(x), a, "MulBackward0"),)
        zero = out.reshape(kept) == 0  # no NaN from 0/0, nor in the graph of the result
        safe = norm(a, 2, dims, True).masked_fill(zero, 1)
        return ((gg * a / safe).masked_fill(np.broadcast_to(zero, x.shape), 0),)

    tbw = tensor_backward if p in (1, 2) and dtype is None else None
    return result(out, "LinalgVectorNormBackward0", (a,), backward, saved=(a,), save_output=True,
                  tensor_backward=tbw)


def _no_identity_check(x, p, dim, dims):
    """inf and negative-p norms have no value for an empty reduction: torch's errors."""
    name = str(int(p)) if p.is_integer() else str(p)
    if dim is None or (not isinstance(dim, _INT) and not len(dim)):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor "
                           "because the operation does not have an identity")
    for d in dims:
        if x.shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {d}"
                               "because this dimension is empty and the operation does not have an identity")


def _nuclear_norm(a, dim, keepdim, dtype):
    x = a._data
    if x.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    if x.dtype.kind != "f":
        raise RuntimeError("linalg.matrix_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(x.dtype)}")
    if dtype is not None:
        x = x.astype(_np_dtype(dtype))
    raw = tuple(range(x.ndim)) if dim is None else (dim,) if isinstance(dim, _INT) else tuple(dim)
    if len(raw) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, raw))}")
    dims = wrap_dims(raw, x.ndim)
    moved = np.moveaxis(x, dims, (-2, -1))
    u, s, vh = np.linalg.svd(moved, full_matrices=False)
    out = s.sum(-1).astype(x.dtype, copy=False)
    kept = tuple(sorted(dims))
    if keepdim:
        out = np.expand_dims(out, kept)
    in_dtype = a._data.dtype

    def backward(g):
        gb = np.squeeze(g, kept) if keepdim else g
        gm = gb[..., None, None] * (u @ vh)
        return (np.moveaxis(gm, (-2, -1), dims).astype(in_dtype, copy=False),)

    # torch composes svdvals and sum; the output's grad_fn is that sum's
    return result(np.asarray(out), "SumBackward1", (a,), backward, saved=(a,))


# --- all / any / count_nonzero -------------------------------------------------------------------


def _logical_reduce(fn):
    def op(a, dim=None, keepdim: bool = False):
        x = a._data
        dims = wrap_dims(dim, x.ndim)
        out = np.asarray(fn(x, axis=dims, keepdims=keepdim))
        if x.dtype == np.uint8:  # torch keeps uint8 for uint8 inputs (a legacy of byte masks)
            out = out.astype(np.uint8)
        return _core.Tensor._wrap(out)

    return op


all = _logical_reduce(np.all)  # noqa: A001
any = _logical_reduce(np.any)  # noqa: A001


def count_nonzero(a, dim=None):
    x = a._data
    dims = wrap_dims(dim, x.ndim)
    return _core.Tensor._wrap(np.asarray(np.asarray(x != 0).sum(axis=dims, dtype=np.int64)))


# --- cumsum / cumprod ------------------------------------------------------------------------------


def _scan_input(a, dim, dtype, name):
    x = a._data
    d = _one_dim(dim, x.ndim)
    if dtype is not None:
        out_dtype = _np_dtype(dtype)
        if out_dtype.kind == "b" and x.ndim and x.size:
            raise NotImplementedError(f"\"{name}_out_cpu\" not implemented for 'Bool'")
        _no_int_autograd(a, out_dtype)
        x = x.astype(out_dtype)
    elif x.dtype.kind in "biu":
        x = x.astype(np.int64)
    return x, d


def _reverse_cumsum(g: np.ndarray, d: int) -> np.ndarray:
    return np.flip(np.cumsum(np.flip(g, d), axis=d), d)


def cumsum(a, dim, dtype=None):
    x, d = _scan_input(a, dim, dtype, "cumsum")
    out = x.copy() if d is None else np.cumsum(x, axis=d, dtype=x.dtype)
    in_dtype = a._data.dtype

    def backward(g):
        return (_as_input_grad(g if d is None else _reverse_cumsum(g, d), in_dtype),)

    return result(out, "CumsumBackward0", (a,), backward)


def _cumprod_backward(x: np.ndarray, out: np.ndarray, g: np.ndarray, d: int) -> np.ndarray:
    if np.all(x != 0):
        return _reverse_cumsum(g * out, d) / x
    # With zeros, no division: grad_i = sum_{j >= i} g_j * prod_{k <= j, k != i} x_k, from the
    # cumulative products of x with x_i replaced by 1 (an n x n table per row).
    xm, gm = np.moveaxis(x, d, -1), np.moveaxis(g, d, -1)
    n = xm.shape[-1]
    eye = np.eye(n, dtype=bool)
    table = np.cumprod(np.where(eye, xm.dtype.type(1), xm[..., None, :]), axis=-1)
    later = np.triu(np.ones((n, n), dtype=bool))
    grad = (table * gm[..., None, :] * later).sum(-1)
    return np.moveaxis(grad, -1, d)


def cumprod(a, dim, dtype=None):
    _core.no_complex("cumprod", a._data)
    x, d = _scan_input(a, dim, dtype, "cumprod")
    out = x.copy() if d is None else np.cumprod(x, axis=d, dtype=x.dtype)
    in_dtype = a._data.dtype

    def backward(g):
        if d is None or x.size == 0:
            return (_as_input_grad(g, in_dtype),)
        return (_as_input_grad(_cumprod_backward(x, out, g, d), in_dtype),)

    return result(out, "CumprodBackward0", (a,), backward, saved=(a,), save_output=True)
