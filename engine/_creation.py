"""Tensor factories: ``tensor``, ``zeros``, ``arange``, ``randn``, ``*_like`` ... (torch's names
and dtype inference: Python floats give the default float dtype, ints give int64)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from . import _dtype, _layout, _memory_format, _random
from ._ops.shape import _sizes
from ._tensor import Tensor, _plain
from ._tensor import device as _device

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["arange", "as_tensor", "bernoulli", "empty", "empty_like", "empty_permuted", "empty_strided", "eye",
           "from_numpy", "frombuffer", "full", "full_like", "linspace", "normal", "ones", "ones_like", "rand",
           "rand_like", "randint", "randn", "randn_like", "randperm", "range", "tensor", "zeros", "zeros_like"]


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


def tensor(data: Any, dtype: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of ``data`` (a number, nested list, array or tensor).

    Example::

        >>> engine.tensor([[1, 2], [3, 4]]).dtype
        engine.int64
    """
    _options("tensor", device, None, pin_memory)
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


# --- the factory options torch's signatures share: size=, out=, layout=, pin_memory= ------------

_PIN_ERROR = ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator "
              "is available on this system.")


def _options(fname: str, device: Any, layout: Any, pin_memory: bool) -> None:
    """``device=`` the CPU, ``layout=`` strided, ``pin_memory=`` False: what a CPU-only torch takes."""
    _check_device(device)
    _layout.check(layout, fname)
    if pin_memory:
        raise RuntimeError(_PIN_ERROR)


_OVERLOADED = ("rand", "randn")  # with and without generator=


def _size(fname: str, positional: tuple, size: Any) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))`` or ``f(size=(2, 3))``."""
    if size is None:
        return _sizes(positional)
    if positional:  # torch's parser words it by whether the function has several overloads
        if fname in _OVERLOADED:
            raise TypeError(f"{fname}() received an invalid combination of arguments - got "
                            f"({', '.join(type(v).__name__ for v in positional)}, size={type(size).__name__})")
        raise TypeError(f"{fname}() got multiple values for argument 'size'")
    if not isinstance(size, tuple | list):
        raise TypeError(f"{fname}(): argument 'size' must be tuple of ints, not {type(size).__name__}")
    return _sizes((size,))


def _out_dtype(fname: str, out: Tensor | None, dtype: Any, requires_grad: bool) -> Any:
    """Check ``out=`` before computing; the dtype to compute in (``out``'s unless ``dtype``)."""
    if out is None:
        return dtype
    if not isinstance(out, Tensor):
        raise TypeError(f"{fname}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if requires_grad or out._requires_grad:
        raise RuntimeError(f"{fname}(): functions with out=... arguments don't support automatic "
                           "differentiation, but one of the arguments requires grad.")
    if dtype is not None and _np_dtype(dtype) != out._data.dtype:
        raise RuntimeError(f"dtype {_dtype.scalar_type_name(_np_dtype(dtype))} does not match dtype of out "
                           f"parameter ({_dtype.scalar_type_name(out._data.dtype)})")
    return out.dtype


def _into(out: Tensor | None, data: np.ndarray, requires_grad: bool) -> Tensor:
    """The result: a new tensor, or written into ``out`` (resized when its shape differs)."""
    if out is None:
        return _finish(data, requires_grad)
    if out._data.shape == data.shape and out._data.flags.writeable:
        out._data[...] = data
    else:
        out._data = np.ascontiguousarray(data, dtype=out._data.dtype)
    out._version_counter[0] += 1
    return out


def _fill(fname: str, fill, positional: tuple, size: Any, out: Any, dtype: Any, layout: Any, device: Any,
          requires_grad: bool, pin_memory: bool, fallback: np.dtype | None = None) -> Tensor:
    _options(fname, device, layout, pin_memory)
    shape = _size(fname, positional, size)
    dtype = _out_dtype(fname, out, dtype, requires_grad)
    return _into(out, fill(shape, _np_dtype(dtype, fallback)), requires_grad)


def zeros(*sizes: Any, size: Any = None, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Zeros of shape ``size`` (``zeros(2, 3)``, ``zeros((2, 3))`` or ``zeros(size=(2, 3))``)."""
    return _fill("zeros", np.zeros, sizes, size, out, dtype, layout, device, requires_grad,
                 pin_memory)


def ones(*sizes: Any, size: Any = None, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return _fill("ones", np.ones, sizes, size, out, dtype, layout, device, requires_grad,
                 pin_memory)


def empty(*sizes: Any, size: Any = None, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
          device: Any = None, requires_grad: bool = False, pin_memory: bool = False,
          memory_format: Any = None) -> Tensor:
    """Uninitialised memory of shape ``size``, laid out as ``memory_format`` asks."""
    def fill(shape: tuple, dt: np.dtype) -> np.ndarray:
        if memory_format is None:
            return np.empty(shape, dt)
        _memory_format.check(memory_format, "empty")
        if memory_format is _memory_format.preserve_format:
            raise RuntimeError("unsupported memory format Preserve")
        return _memory_format.filled_like(np.empty, shape, dt, np.empty(0), memory_format)
    return _fill("empty", fill, sizes, size, out, dtype, layout, device, requires_grad,
                 pin_memory)


def empty_strided(size: Any, stride: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                  requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A tensor of shape ``size`` whose ``stride()`` is ``stride`` (in elements), over a fresh
    storage just large enough for it (``1 + sum((size - 1) * stride)`` elements). torch leaves the
    memory uninitialised; here it holds zeros."""
    _options("empty_strided", device, layout, pin_memory)
    shape, steps = tuple(int(n) for n in size), tuple(int(s) for s in stride)
    if len(shape) != len(steps):
        raise RuntimeError(f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
                           f"({len(steps)})")
    if any(n < 0 for n in shape):
        bad = next(n for n in shape if n < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: {list(shape)}")
    if any(s < 0 for s in steps):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)} and strides={list(steps)}")
    dt = _np_dtype(dtype)
    numel = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, steps))
    storage = np.zeros(numel, dt)
    data = np.lib.stride_tricks.as_strided(storage, shape, tuple(s * dt.itemsize for s in steps))
    return _finish(data, requires_grad)


def empty_permuted(size: Any, physical_layout: Any, *, dtype: Any = None, layout: Any = None, device: Any = None,
                   requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A dense tensor of shape ``size`` laid out in memory in the order ``physical_layout`` (outermost
    dim first: ``(0, 2, 3, 1)`` is NHWC for an NCHW shape), so that ``t.stride(physical_layout[i])``
    is the ``i``-th contiguous stride of the permuted shape. torch leaves it uninitialised; here it
    holds zeros."""
    for position, (name, value) in enumerate((("size", size), ("physical_layout", physical_layout)), 1):
        if not isinstance(value, tuple | list):
            raise TypeError(f"empty_permuted(): argument '{name}' (position {position}) must be tuple of ints, "
                            f"not {type(value).__name__}")
    shape, order = tuple(int(n) for n in size), tuple(int(d) for d in physical_layout)
    if len(shape) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the physical_layout; i.e. "
                           f"len(size) = {len(shape)} is not equal to len(physical_layout) = {len(order)}")
    for index, d in enumerate(order):
        if not 0 <= d < len(shape):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and {len(shape) - 1}, but got {d} "
                               f"at index {index}).  NB: negative dims not currently supported; file an issue if "
                               "you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    strides = [0] * len(shape)
    step = 1
    for d in reversed(order):  # innermost first; an empty dim counts as 1, as in torch's contiguous strides
        strides[d] = step
        step *= max(shape[d], 1)
    return empty_strided(shape, strides, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad,
                         pin_memory=pin_memory)


_NOT_WRITABLE = ("The given buffer is not writable, and PyTorch does not support non-writable tensors. This means "
                 "you can write to the underlying (supposedly non-writable) buffer using the tensor. You may want "
                 "to copy the buffer to protect its data or make it writable before converting it to a tensor. "
                 "This type of warning will be suppressed for the rest of this program.")
_warned_not_writable: list[bool] = []


def frombuffer(buffer: Any, *, dtype: Any, count: int = -1, offset: int = 0, requires_grad: bool = False) -> Tensor:
    """A 1-D tensor over an object with the buffer protocol (``bytearray``, ``array.array``,
    ``memoryview``, ...): it shares the memory, so writes to either show in the other. ``count``
    elements (all that fit after ``offset`` bytes when negative)."""
    try:
        view = memoryview(buffer)
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dt = _np_dtype(dtype)
    length, size = view.nbytes, dt.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than buffer length "
                         f"({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % size:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} bytes) must be a "
                             f"multiple of element size ({size})")
        count = (length - offset) // size
    elif offset + count * size > length:
        raise ValueError(f"requested buffer length ({count} * {size} bytes) after offset ({offset} bytes) must "
                         f"not be greater than actual buffer length ({length} bytes)")
    if view.readonly and not _warned_not_writable:  # once per process, as torch's TORCH_WARN_ONCE
        _warned_not_writable.append(True)
        warnings.warn(_NOT_WRITABLE, UserWarning, stacklevel=2)
    data = np.frombuffer(view.cast("B"), dtype=dt, count=count, offset=offset)
    return _finish(data, requires_grad)


def full(size: Any, fill_value: Any, *, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
         device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    fallback = _infer(fill_value).dtype if dtype is None else None
    return _fill("full", lambda s, d: np.full(s, fill_value, d), (size,), None, out, dtype, layout, device,
                 requires_grad, pin_memory, fallback)


def _like(fname: str, fill, t: Tensor, dtype: Any, layout: Any, device: Any, requires_grad: bool,
          memory_format: Any, pin_memory: bool = False) -> Tensor:
    _options(fname, device, layout, pin_memory)
    data = _memory_format.filled_like(fill, t.shape, _np_dtype(dtype, t._data.dtype), t._data, memory_format)
    return _finish(data, requires_grad)


def zeros_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,  # noqa: A002
               requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("zeros_like", np.zeros, input, dtype, layout, device, requires_grad, memory_format, pin_memory)


def ones_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,  # noqa: A002
              requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("ones_like", np.ones, input, dtype, layout, device, requires_grad, memory_format, pin_memory)


def empty_like(input: Tensor, *, dtype: Any = None, layout: Any = None, device: Any = None,  # noqa: A002
               requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("empty_like", np.empty, input, dtype, layout, device, requires_grad, memory_format, pin_memory)


def full_like(input: Tensor, fill_value: Any, *, dtype: Any = None, layout: Any = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("full_like", lambda s, d: np.full(s, fill_value, d), input, dtype, layout, device, requires_grad,
                 memory_format, pin_memory)


def rand(*sizes: Any, size: Any = None, generator: Any = None, out: Tensor | None = None, dtype: Any = None,
         layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Uniform samples from [0, 1)."""
    return _fill("rand", lambda s, d: _random.uniform_array(s, 0, 1, d, generator), sizes, size,
                 out, dtype, layout, device, requires_grad, pin_memory)


def randn(*sizes: Any, size: Any = None, generator: Any = None, out: Tensor | None = None, dtype: Any = None,
          layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """Standard normal samples."""
    return _fill("randn", lambda s, d: _random.normal_array(s, 0, 1, d, generator), sizes, size, out, dtype,
                 layout, device, requires_grad, pin_memory)


def rand_like(input: Tensor, *, generator: Any = None, dtype: Any = None, layout: Any = None,  # noqa: A002
              device: Any = None, requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("rand_like", lambda s, d: _random.uniform_array(s, 0, 1, d, generator), input, dtype, layout,
                 device, requires_grad, memory_format, pin_memory)


def randn_like(input: Tensor, *, generator: Any = None, dtype: Any = None, layout: Any = None,  # noqa: A002
               device: Any = None, requires_grad: bool = False, memory_format: Any = None,
               pin_memory: bool = False) -> Tensor:
    return _like("randn_like", lambda s, d: _random.normal_array(s, 0, 1, d, generator), input, dtype, layout,
                 device, requires_grad, memory_format, pin_memory)


_RANDINT_FORMS = ("randint() received an invalid combination of arguments: expected (high, size) or "
                  "(low, high, size), each a positional or keyword argument")


def randint(*args: Any, low: int | None = None, high: int | None = None, size: Any = None,
            generator: Any = None, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
            device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``randint(high, size)`` or ``randint(low, high, size)`` (any of them by keyword):
    integers in [low, high)."""
    if low is not None or len(args) == 3 or (high is not None and args) or (size is not None and len(args) == 2):
        slots = {"low": low, "high": high, "size": size}
    else:
        slots = {"high": high, "size": size}
    free = [name for name, value in slots.items() if value is None]
    if len(args) > len(free):
        raise TypeError(_RANDINT_FORMS)
    slots.update(zip(free, args, strict=False))
    if slots["high"] is None or slots["size"] is None:
        raise TypeError(_RANDINT_FORMS)
    lo, hi = slots.get("low") or 0, slots["high"]
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    return _fill("randint", lambda s, d: _random.integers_array(lo, hi, s, d, generator), (), slots["size"], out,
                 dtype, layout, device, requires_grad, pin_memory, np.dtype(np.int64))


def randperm(n: int, *, generator: Any = None, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
             device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """A random permutation of ``0 .. n-1`` (int64 unless ``dtype``)."""
    return _fill("randperm", lambda s, d: _random.permutation(n, generator).astype(d), (n,), None, out, dtype,
                 layout, device, requires_grad, pin_memory, np.dtype(np.int64))


def normal(mean: float, std: float, size: Any, *, generator: Any = None, out: Tensor | None = None,
           dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    return _fill("normal", lambda s, d: _random.normal_array(s, mean, std, d, generator), (), size, out, dtype,
                 layout, device, requires_grad, pin_memory)


def bernoulli(input: Tensor, p: float | None = None, *, generator: Any = None,  # noqa: A002
              out: Tensor | None = None) -> Tensor:
    """0/1 draws with probability ``input`` (or ``p`` for every element), in ``input``'s dtype."""
    prob = input._data if p is None else p
    draws = _random.uniform_array(input.shape, 0, 1, np.float64, generator) < prob
    dtype = _out_dtype("bernoulli", out, None, False)
    return _into(out, draws.astype(input._data.dtype if dtype is None else _np_dtype(dtype)), False)


def _scalar(v: Any) -> Any:
    """A range bound as a Python number (a 0-d tensor's value, as torch reads it)."""
    return v.item() if isinstance(v, Tensor) else v


def _check_bounds(start: Any, end: Any, step: Any) -> None:
    """torch's checks of arange's and range's bounds, in its order and words."""
    for v in (start, end):
        if isinstance(v, float) and not np.isfinite(v):
            raise RuntimeError(f"unsupported range: {start} -> {end}")
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (end - start) * step < 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")


def arange(start: Any = None, end: Any = None, step: Any = 1, *, out: Tensor | None = None, dtype: Any = None,
           layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    """``arange(end)`` or ``arange(start, end, step)``: values in [start, end); int64 for integer arguments."""
    if end is None:
        start, end = 0, start
    elif start is None:
        start = 0
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    _check_bounds(start, end, step)
    ints = all(isinstance(v, int) for v in (start, end, step))
    fallback = np.dtype(np.int64) if ints else _dtype._default_float.np
    n = int(np.ceil((end - start) / step))  # an infinite step gives no element past the start
    return _fill("arange", lambda s, d: (start + np.arange(n) * step).astype(d), (), (), out, dtype, layout, device,
                 requires_grad, pin_memory, fallback)


_RANGE_DEPRECATED = ("torch.range is deprecated and will be removed in a future release because its behavior is "
                     "inconsistent with Python's range builtin. Instead, use torch.arange, which produces values in "
                     "[start, end).")


def range(start: Any = 0, end: Any = None, step: Any = 1, *, out: Tensor | None = None,  # noqa: A001
          dtype: Any = None, layout: Any = None, device: Any = None, requires_grad: bool = False) -> Tensor:
    """Deprecated ``torch.range``: values from ``start`` to ``end`` *inclusive*
    (``floor((end - start) / step) + 1`` of them), in the default float dtype even for integer
    arguments; torch's deprecation warning. With an integer ``dtype`` the bounds and step are cast
    to it first, as torch does (``range(0, 10, 2.5, dtype=int64)`` steps by 2)."""
    warnings.warn(_RANGE_DEPRECATED, UserWarning, stacklevel=2)
    if end is None:
        raise TypeError('range() missing 1 required positional arguments: "end"')
    start, end, step = _scalar(start), _scalar(end), _scalar(step)
    dtype = _out_dtype("range", out, dtype, requires_grad)
    dt = _np_dtype(dtype)
    if dt.kind == "b":
        raise NotImplementedError('"range_cpu" not implemented for \'Bool\'')
    _check_bounds(start, end, step)
    if dt.kind in "iu":
        # torch casts to the integer type first (its division by a step that truncates to 0 kills
        # the process with SIGFPE; here the nonzero check runs again)
        start, end, step = int(start), int(end), int(step)
        _check_bounds(start, end, step)
    n = int(np.floor((end - start) / step)) + 1
    return _fill("range", lambda s, d: (start + np.arange(n, dtype=np.float64) * step).astype(d), (), (), out, dtype,
                 layout, device, requires_grad, False)


def linspace(start: float, end: float, steps: int, *, out: Tensor | None = None, dtype: Any = None,
             layout: Any = None, device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    return _fill("linspace", lambda s, d: np.linspace(start, end, steps).astype(d), (), (), out, dtype, layout,
                 device, requires_grad, pin_memory)


def eye(n: int, m: int | None = None, *, out: Tensor | None = None, dtype: Any = None, layout: Any = None,
        device: Any = None, requires_grad: bool = False, pin_memory: bool = False) -> Tensor:
    return _fill("eye", lambda s, d: np.eye(n, m, dtype=d), (), (), out, dtype, layout, device, requires_grad,
                 pin_memory)
