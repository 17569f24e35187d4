"""``torch.*`` functions real code reaches for beyond the core ops: dtype queries
(``result_type``, ``promote_types``, ``can_cast``), factories (``logspace``, ``scalar_tensor``,
``asarray``, ``randint_like``, the signal windows), ``dstack``, ``unravel_index``,
``histogram``, the ``poisson``/``binomial`` samplers and the default device.
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections import namedtuple
from collections.abc import Sequence
from typing import Any

import numpy as np

import engine._ops._core as _core
import engine._ops.shape as shape
import engine._ops.shape_composite as shape_composite

from .. import _dtype, _random
from .._creation import _fill, _options, tensor
from .._tensor import _CPU
from .._tensor import _c_type as c_type
from .._tensor import device as device_cls
from ._core import result

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["asarray", "bartlett_window", "binomial", "blackman_window", "can_cast", "dstack", "get_default_device",
           "hamming_window", "hann_window", "histogram", "kaiser_window", "logspace", "poisson", "promote_types",
           "randint_like", "result_type", "scalar_tensor", "set_default_device", "unravel_index"]

histogram_result = namedtuple("histogram", ["hist", "bin_edges"])


def _Tensor():  # noqa: N802 - the class, looked up late (import cycle)
    return _core.Tensor


def _finish(data: np.ndarray, requires_grad: bool):
    t = _Tensor()._wrap(data)
    return t.requires_grad_(True) if requires_grad else t


def _np(dtype: Any, fallback: np.dtype | None = None) -> np.dtype:
    if dtype is None:
        return fallback if fallback is not None else _core.default_float()
    return _dtype.to_numpy_dtype(dtype)


# --- dtype queries ------------------------------------------------------------------------------

def _operand(v: Any, pos: int, fname: str) -> Any:
    if isinstance(v, _Tensor()):
        return v._data
    if isinstance(v, bool | int | float):
        return v
    raise TypeError(f"{fname}() received an invalid combination of arguments - got an argument of type "
                    f"{type(v).__name__} at position {pos}, but expected Tensor or Number")


def result_type(tensor1: Any, tensor2: Any) -> _dtype.dtype:
    """The dtype torch's promotion gives an op on these operands (tensors or Python numbers):
    dimensioned tensors outrank 0-dim ones, which outrank numbers, unless of a higher category."""
    a, b = _operand(tensor1, 1, "result_type"), _operand(tensor2, 2, "result_type")
    return _dtype.from_numpy_dtype(_dtype.result_type_many(a, b))


def _check_dtype(v: Any, pos: int, arg: str, fname: str) -> np.dtype:
    if not isinstance(v, _dtype.dtype):
        raise TypeError(f"{fname}(): argument '{arg}' (position {pos}) must be torch.dtype, not {type(v).__name__}")
    return v.np


def promote_types(type1: _dtype.dtype, type2: _dtype.dtype) -> _dtype.dtype:
    """The smallest dtype both promote to (across categories the higher one wins:
    int64 with float16 is float16, as in torch)."""
    a, b = _check_dtype(type1, 1, "type1", "promote_types"), _check_dtype(type2, 2, "type2", "promote_types")
    return _dtype.from_numpy_dtype(_dtype.result_type(np.empty(1, a), np.empty(1, b)))


def can_cast(from_: _dtype.dtype, to: _dtype.dtype) -> bool:
    """torch's casting rule for in-place ops: no float to integer or bool, no complex to real,
    no anything to bool but bool."""
    a, b = _check_dtype(from_, 1, "from_", "can_cast"), _check_dtype(to, 2, "to", "can_cast")
    cat = _dtype._category
    return cat(a) <= cat(b) or (cat(a) == 0)


# --- factories ----------------------------------------------------------------------------------

def logspace(start: float, end: float, steps: int, base: float = 10.0, *, out: Any = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False):
    """``base ** linspace(start, end, steps)`` (computed in double, then cast)."""

    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    data = np.power(float(base), np.linspace(start, end, steps))
    return _fill("logspace", lambda s, d: np.round(data).astype(d) if d.kind in "iu" else data.astype(d), (), (),
                 out, dtype, layout, device, requires_grad, pin_memory)


def _factory_options(name: str, layout: Any, pin_memory: bool) -> None:
    """``layout=`` strided and ``pin_memory=`` False, as ``_creation``'s factories check them."""

    _options(name, None, layout, pin_memory)


def scalar_tensor(s: Any, *, dtype: Any = None, device: Any = None, layout: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False):
    """A 0-d tensor holding ``s`` in ``dtype`` (default: the default float, whatever ``s`` is)."""
    _device(device)
    value = s.item() if isinstance(s, _Tensor()) else s
    return _finish(np.asarray(value, dtype=_np(dtype)), requires_grad)


def asarray(obj: Any, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            requires_grad: bool | None = None):
    """``obj`` as a tensor, sharing memory with a tensor or NumPy array when possible (always
    with ``copy=False``, never with ``copy=True``); other data is copied with torch's inference."""
    _device(device)
    Tensor = _Tensor()
    if isinstance(obj, Tensor):
        return _asarray_tensor(obj, dtype, copy, requires_grad)
    if isinstance(obj, np.ndarray | np.generic):
        arr = np.asarray(obj)
        want = _np(dtype, arr.dtype)
        if want != arr.dtype and copy is False:
            raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(arr.dtype)}' into dtype "
                             f"'{_dtype.scalar_type_name(want)}'.")
        out = arr.astype(want, copy=bool(copy)) if (copy or want != arr.dtype) else arr
        return _finish(out, bool(requires_grad))
    if copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    out = tensor(obj, dtype=dtype)
    if requires_grad and out._data.dtype.kind not in "fc":
        raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
    return out.requires_grad_(True) if requires_grad else out


def _asarray_tensor(obj, dtype, copy, requires_grad):
    src = obj._data.dtype
    want = _np(dtype, src)
    if want != src and copy is False:
        raise ValueError(f"can't alias tensor with dtype '{_dtype.scalar_type_name(src)}' into dtype "
                         f"'{_dtype.scalar_type_name(want)}'.")
    if requires_grad is None and obj._requires_grad:
        warnings.warn("torch.asarray: unspecified requires_grad now defaults to obj.requires_grad instead of "
                      "False. Pass requires_grad=False explicitly to get the old behavior and silence this "
                      "warning.", UserWarning, stacklevel=3)
    out = obj.to(_dtype.from_numpy_dtype(want)) if want != src else obj
    if copy:
        out = out.clone()
    if requires_grad is False:
        return out.detach()
    return out.requires_grad_(True) if requires_grad and not out._requires_grad else out


def randint_like(input, low: int = 0, high: int | None = None, *, generator: Any = None,  # noqa: A002
                 dtype: Any = None, device: Any = None, layout: Any = None, requires_grad: bool = False,
                 memory_format: Any = None, pin_memory: bool = False):
    """Integers from [low, high) (``randint_like(x, high)``: [0, high)) shaped as ``input``, in
    its dtype unless ``dtype`` is given."""
    _device(device)
    _factory_options("randint_like", layout, pin_memory)
    if high is None:
        low, high = 0, low
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    npdt = _np(dtype, input._data.dtype)
    return _finish(_random.integers_array(low, high, input.shape, npdt, generator), requires_grad)


def _window_args(name: str, window_length: int, dtype: Any, device: Any) -> np.dtype:
    _device(device)
    npdt = _np(dtype)
    if npdt.kind != "f":
        raise RuntimeError(f"{name} expects floating point dtypes, got: TensorOptions(dtype="
                           f"{_c_type(npdt)}, device=cpu, layout=Strided (default), requires_grad=false "
                           "(default), pinned_memory=false, memory_format=(nullopt))")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window_length, got window_length={window_length}")
    return npdt


def _c_type(npdt: np.dtype) -> str:
    return c_type(npdt)


def _window(name: str, window_length: int, periodic: bool, dtype: Any, device: Any, requires_grad: bool,
            fn) -> Any:
    """``fn(n, N)`` over n = 0..L-1, N = L + 1 for a periodic window (torch's convention: the
    symmetric window one longer, its last point dropped); a length-1 window is [1]."""
    npdt = _window_args(name, window_length, dtype, device)
    if window_length <= 1:
        return _finish(np.ones(window_length, npdt), requires_grad)
    big_n = window_length + 1 if periodic else window_length
    n = np.arange(window_length, dtype=np.float64)
    return _finish(fn(n, big_n).astype(npdt), requires_grad)


def hann_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                layout: Any = None, requires_grad: bool = False,
                pin_memory: bool = False):
    _factory_options("hann_window", layout, pin_memory)
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 0.5 - 0.5 * np.cos(2 * math.pi * n / (N - 1)))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54, beta: float = 0.46, *,
                   dtype: Any = None, device: Any = None, layout: Any = None, requires_grad: bool = False,
                pin_memory: bool = False):
    _factory_options("hamming_window", layout, pin_memory)
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: alpha - beta * np.cos(2 * math.pi * n / (N - 1)))


def blackman_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    layout: Any = None, requires_grad: bool = False,
                pin_memory: bool = False):
    def blackman(n, N):
        phase = 2 * math.pi * n / (N - 1)
        return 0.42 - 0.5 * np.cos(phase) + 0.08 * np.cos(2 * phase)

    _factory_options("blackman_window", layout, pin_memory)
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad, blackman)


def bartlett_window(window_length: int, periodic: bool = True, *, dtype: Any = None, device: Any = None,
                    layout: Any = None, requires_grad: bool = False,
                pin_memory: bool = False):
    _factory_options("bartlett_window", layout, pin_memory)
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda n, N: 1 - np.abs(2 * n / (N - 1) - 1))


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype: Any = None,
                  device: Any = None, layout: Any = None, requires_grad: bool = False,
                pin_memory: bool = False):
    def kaiser(n, N):
        half = (N - 1) / 2
        return np.i0(beta * np.sqrt(np.clip(1 - ((n - half) / half) ** 2, 0, None))) / np.i0(beta)

    _factory_options("kaiser_window", layout, pin_memory)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, kaiser)


# --- shapes and indices -------------------------------------------------------------------------

def dstack(tensors: Sequence, *, out: Any = None):
    """Stack along the third dim after ``atleast_3d`` (1-d (N,) becomes (1, N, 1))."""
    if len(tensors) == 0:
        raise RuntimeError("dstack expects a non-empty TensorList")
    return shape.cat([shape_composite.atleast_3d(t) for t in tensors], 2)


def unravel_index(indices, shape_: Any):
    """The coordinates of flat ``indices`` in an array of ``shape`` (a tuple of int64 tensors
    shaped as ``indices``); indices outside wrap around as torch's do."""
    if not isinstance(indices, _Tensor()) or indices._data.dtype.kind not in "iu":
        got = indices.dtype if isinstance(indices, _Tensor()) else type(indices).__name__
        raise TypeError(f"expected 'indices' to be integer dtype, but got {got}")
    dims = (int(shape_),) if isinstance(shape_, numbers.Integral) else tuple(int(d) for d in shape_)
    if any(d < 0 for d in dims):
        raise ValueError(f"'shape' cannot have negative values, but got {tuple(dims)}")
    idx = indices._data.astype(np.int64)
    strides = np.cumprod((1,) + dims[:0:-1])[::-1] if dims else np.zeros(0, np.int64)
    return tuple(_Tensor()._wrap(np.mod(np.floor_divide(idx, s), d).astype(np.int64))
                 for s, d in zip(strides.tolist(), dims))


# --- histogram ----------------------------------------------------------------------------------

def histogram(input, bins: Any, *, range: Sequence[float] | None = None, weight: Any = None,  # noqa: A002
              density: bool = False, out: Any = None):
    """``(hist, bin_edges)``: counts (or summed ``weight``) of ``input``'s values in ``bins``
    equal bins over ``range`` (default: the values' min and max) or between the given edges;
    the last bin includes its right edge. ``density`` divides by the total and the bin widths."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{_dtype.scalar_type_name(x.dtype)}'")
    flat = x.reshape(-1)
    edges = bins._data.astype(x.dtype) if isinstance(bins, _Tensor()) else _equal_edges(flat, int(bins), range)
    nbins = edges.size - 1
    pos = np.searchsorted(edges, flat, side="right") - 1
    pos = np.where(flat == edges[-1], nbins - 1, pos)
    inside = (flat >= edges[0]) & (flat <= edges[-1]) & (pos >= 0) & (pos < nbins)
    w = None if weight is None else weight._data.reshape(-1)[inside]
    hist = np.bincount(pos[inside], weights=w, minlength=max(nbins, 0))[:max(nbins, 0)].astype(x.dtype)
    if density:
        hist = (hist / (hist.sum() * np.diff(edges))).astype(x.dtype)
    return histogram_result(_Tensor()._wrap(hist), _Tensor()._wrap(np.ascontiguousarray(edges)))


def _equal_edges(flat: np.ndarray, bins: int, rng: Sequence[float] | None) -> np.ndarray:
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])
        if lo > hi:
            raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {lo:g} max {hi:g} "
                               "for dimension 0")
    elif flat.size:
        lo, hi = float(flat.min()), float(flat.max())
    else:
        lo, hi = 0.0, 0.0
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise RuntimeError(f"torch.histogramdd: dimension 0's range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, bins + 1).astype(flat.dtype)


# --- samplers -----------------------------------------------------------------------------------

def poisson(input, generator: Any = None):  # noqa: A002
    """Poisson draws with rates ``input`` (its dtype); the node passes a zero gradient."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"poisson_cpu\" not implemented for '{_dtype.scalar_type_name(x.dtype)}'")
    if (x < 0).any():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    draws = _random._rng(generator).poisson(x).astype(x.dtype)
    return result(draws, "PoissonBackward0", (input,), lambda g: (np.zeros_like(g),))


def binomial(count, prob, generator: Any = None):
    """Binomial draws with ``count`` trials (a float tensor) and success probability ``prob``
    (clipped to [0, 1]); the node raises on backward, as torch's does."""
    c = count._data
    if c.dtype.kind != "f":
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{_dtype.scalar_type_name(c.dtype)}")
    p = np.clip(prob._data, 0, 1)
    draws = _random._rng(generator).binomial(c.astype(np.int64), p).astype(c.dtype)

    def backward(*_):
        raise RuntimeError("derivative for aten::binomial is not implemented")

    return result(draws, "NotImplemented", (count, prob), backward)


# --- default device -----------------------------------------------------------------------------

def _device(device: Any) -> None:
    if device is not None:
        if not isinstance(device, device_cls):
            device_cls(device)


def get_default_device():
    """Always ``device(type='cpu')``: the engine's only device."""
    return _CPU


def set_default_device(device: Any) -> None:
    """Accepts ``'cpu'`` (or None); any other device raises the engine's device error."""
    _device(device)
