"""Tensor factories: ``tensor``, ``zeros``, ``arange``, ``randn``, ``*_like`` ... (torch's names
and dtype inference: Python floats give the default float dtype, ints give int64)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import _dtype, _memory_format, _random
from ._ops.shape import _sizes
from ._tensor import Tensor, _plain
from ._tensor import device as _device


def _np_dtype(dtype: Any, fallback: np.dtype | None = None) -> np.dtype:
    if dtype is None:
        return fallback if fallback is not None else _dtype._default_float.np
    return _dtype.to_numpy_dtype(dtype)


def _check_device(device: Any) -> None:
    """A factory's ``device=``: the CPU (or None); any other device raises as ``.to()`` does."""
    if device is not None and not isinstance(device, _device):
        _device(device)


def _finish(data: np.ndarray, requires_grad: bool) -> Tensor:
    t = Tensor._wrap(data)
    return t.requires_grad_(True) if requires_grad else t


def _infer(data: Any, float_dtype: np.dtype | None = None) -> np.ndarray:
    """Python data -> array with torch's inference (floats -> default dtype, ints -> int64).
    ``float_dtype``: Python floats go straight to it (a float64 tensor of ``[0.3]`` holds the
    double 0.3, not 0.3 rounded through float32 first)."""
    arr = np.array(_plain(data))
    typed = isinstance(data, np.ndarray | np.generic)  # NumPy data keeps its dtype, as in torch
    if arr.dtype.kind == "f" and not typed:
        return arr.astype(float_dtype if float_dtype is not None else _dtype._default_float.np)
    if arr.dtype.kind in "iu" and not typed:
        return arr.astype(np.int64)
    if arr.dtype.kind == "c" and not typed:  # Python complex numbers: the default float's complex
        return arr.astype(np.complex64 if _dtype._default_float.np == np.float32 else np.complex128)
    if arr.dtype.kind not in "fiubc":
        raise TypeError(f"can't convert data of type {arr.dtype} to a tensor: {data!r:.60}")
    _dtype.from_numpy_dtype(arr.dtype)
    return arr


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested list, array or tensor).

    Example::

        >>> engine.tensor([[1, 2], [3, 4]]).dtype
        engine.int64
    """
    _check_device(device)
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.clone()."
            "detach() or sourceTensor.clone().detach().requires_grad_(True), rather than "
            "engine.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    target = _np_dtype(dtype) if dtype is not None else None
    arr = _infer(data, target if target is not None and target.kind == "f" else None)
    arr = arr.astype(target, copy=True) if target is not None else arr.copy()
    return _finish(arr, requires_grad)


def as_tensor(data: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array (or tensor) when no cast is needed."""
    _check_device(device)
    if isinstance(data, Tensor):
        return data if dtype is None or data.dtype.np == _np_dtype(dtype) else data.to(dtype)
    if isinstance(data, np.ndarray | np.generic):
        data = np.asarray(data)
        arr = data if dtype is None else data.astype(_np_dtype(dtype), copy=False)
        _dtype.from_numpy_dtype(arr.dtype)
        return Tensor._wrap(arr)
    arr = _infer(data)
    return Tensor._wrap(arr if dtype is None else arr.astype(_np_dtype(dtype)))


def from_numpy(array: np.ndarray) -> Tensor:
    """A tensor on the same memory as ``array`` (writes to one show in the other)."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _dtype.from_numpy_dtype(array.dtype)
    return Tensor._wrap(array)


def _filled(fill, size, dtype, requires_grad, fallback=None) -> Tensor:
    return _finish(fill(_sizes(size), _np_dtype(dtype, fallback)), requires_grad)


def zeros(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _filled(np.zeros, size, dtype, requires_grad)


def ones(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _filled(np.ones, size, dtype, requires_grad)


def empty(*size: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _filled(np.empty, size, dtype, requires_grad)


def full(size: Any, fill_value: Any, dtype: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    _check_device(device)
    fallback = _infer(fill_value).dtype if dtype is None else None
    return _filled(lambda s, d: np.full(s, fill_value, d), (size,), dtype, requires_grad, fallback)


def _like(fill, t: Tensor, dtype: Any, requires_grad: bool, memory_format: Any = None) -> Tensor:
    data = _memory_format.filled_like(fill, t.shape, _np_dtype(dtype, t._data.dtype), t._data, memory_format)
    return _finish(data, requires_grad)


def zeros_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,  # noqa: A002
               memory_format: Any = None) -> Tensor:
    _check_device(device)
    return _like(np.zeros, input, dtype, requires_grad, memory_format)


def ones_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,  # noqa: A002
              memory_format: Any = None) -> Tensor:
    _check_device(device)
    return _like(np.ones, input, dtype, requires_grad, memory_format)


def empty_like(input: Tensor, dtype: Any = None, device: Any = None, requires_grad: bool = False,  # noqa: A002
               memory_format: Any = None) -> Tensor:
    _check_device(device)
    return _like(np.empty, input, dtype, requires_grad, memory_format)


def full_like(input: Tensor, fill_value: Any, dtype: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False, memory_format: Any = None) -> Tensor:
    _check_device(device)
    return _like(lambda s, d: np.full(s, fill_value, d), input, dtype, requires_grad, memory_format)


def rand(*size: Any, dtype: Any = None, generator: Any = None, device: Any = None,
         requires_grad: bool = False) -> Tensor:
    """Uniform samples from [0, 1)."""
    _check_device(device)
    return _finish(_random.uniform_array(_sizes(size), 0, 1, _np_dtype(dtype), generator), requires_grad)


def randn(*size: Any, dtype: Any = None, generator: Any = None, device: Any = None,
          requires_grad: bool = False) -> Tensor:
    """Standard normal samples."""
    _check_device(device)
    return _finish(_random.normal_array(_sizes(size), 0, 1, _np_dtype(dtype), generator), requires_grad)


def rand_like(input: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A002
    return rand(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randn_like(input: Tensor, dtype: Any = None, requires_grad: bool = False) -> Tensor:  # noqa: A002
    return randn(input.shape, dtype=dtype or input.dtype, requires_grad=requires_grad)


def randint(*args: Any, size: Any = None, dtype: Any = None, generator: Any = None,
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)``: integers in [low, high)."""
    _check_device(device)
    if size is None:
        *bounds, size = args
    else:
        bounds = list(args)
    low, high = (0, bounds[0]) if len(bounds) == 1 else bounds
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    data = _random.integers_array(low, high, _sizes((size,)), _np_dtype(dtype, np.dtype(np.int64)),
                                  generator)
    return _finish(data, requires_grad)


def randperm(n: int, dtype: Any = None, generator: Any = None, device: Any = None) -> Tensor:
    _check_device(device)
    return Tensor._wrap(_random.permutation(n, generator).astype(_np_dtype(dtype, np.dtype(np.int64))))


def normal(mean: float, std: float, size: Any, generator: Any = None) -> Tensor:
    return Tensor._wrap(_random.normal_array(_sizes((size,)), mean, std,
                                             _dtype._default_float.np, generator))


def bernoulli(input: Tensor, generator: Any = None) -> Tensor:  # noqa: A002
    draws = _random.uniform_array(input.shape, 0, 1, np.float64, generator) < input._data
    return Tensor._wrap(draws.astype(input._data.dtype))


def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, device: Any = None,
           requires_grad: bool = False) -> Tensor:
    """``arange(end)`` or ``arange(start, end, step)``: int64 for integer arguments."""
    _check_device(device)
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    ints = all(isinstance(v, int) for v in (start, end, step))
    fallback = np.dtype(np.int64) if ints else _dtype._default_float.np
    return _finish(np.arange(start, end, step).astype(_np_dtype(dtype, fallback)), requires_grad)


def linspace(start: float, end: float, steps: int, dtype: Any = None, device: Any = None,
             requires_grad: bool = False) -> Tensor:
    _check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _finish(np.linspace(start, end, steps).astype(_np_dtype(dtype)), requires_grad)


def eye(n: int, m: int | None = None, dtype: Any = None, device: Any = None,
        requires_grad: bool = False) -> Tensor:
    _check_device(device)
    return _finish(np.eye(n, m, dtype=_np_dtype(dtype)), requires_grad)
