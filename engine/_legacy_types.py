"""torch's legacy tensor types: ``engine.FloatTensor``, ``engine.LongTensor``, ... as old tutorials
use them -- ``LongTensor([1, 2])`` builds from data, ``FloatTensor(2, 3)`` an uninitialised tensor
of that size, ``isinstance(t, FloatTensor)`` tests the dtype, ``t.type(LongTensor)`` converts."""

from __future__ import annotations

import numbers

from . import _creation, _dtype
from ._tensor import _LEGACY, Size, Tensor

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["BoolTensor", "ByteTensor", "CharTensor", "DoubleTensor", "FloatTensor", "HalfTensor", "IntTensor",
           "LongTensor", "ShortTensor"]


class tensortype(type):  # noqa: N801 - torch's name for the class of torch.FloatTensor
    """The metaclass of the legacy types; an instance check compares dtypes, as torch's does."""

    dtype: _dtype.dtype

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args):
        if not args:
            return _creation.empty(0, dtype=cls.dtype)
        if len(args) == 1 and isinstance(args[0], Size):
            return _creation.empty(*args[0], dtype=cls.dtype)
        if all(isinstance(a, numbers.Integral) and not isinstance(a, bool) for a in args):
            return _creation.empty(*args, dtype=cls.dtype)
        if len(args) > 1:
            bad = next(a for a in args if not isinstance(a, numbers.Integral))
            raise TypeError(f"new(): argument 'size' failed to unpack the object at pos {args.index(bad) + 1} "
                            f"with error \"type must be tuple of ints,but got {type(bad).__name__}\"")
        data = args[0]
        if isinstance(data, Tensor):
            if data.dtype != cls.dtype:
                raise TypeError(f"expected {_options(cls.dtype)} (got {_options(data.dtype)})")
            return data.detach()
        if isinstance(data, str):
            raise TypeError("new(): invalid data type 'str'")
        if isinstance(data, numbers.Number):
            raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
        return _creation.tensor(data, dtype=cls.dtype)


_CPP_NAMES = {"float32": "float", "float64": "double", "float16": "c10::Half", "int64": "long int",
              "int32": "int", "int16": "short int", "int8": "signed char", "uint8": "unsigned char",
              "bool": "bool"}


def _options(dt: _dtype.dtype) -> str:
    return (f"TensorOptions(dtype={_CPP_NAMES[str(dt).split('.')[-1]]}, device=cpu, layout=Strided, "
            "requires_grad=false (default), pinned_memory=false (default), memory_format=(nullopt))")


def _make(numpy_name: str) -> tensortype:
    cls = tensortype(_LEGACY[numpy_name], (), {"__module__": "engine"})
    cls.dtype = getattr(_dtype, numpy_name if numpy_name != "bool" else "bool_")
    return cls


FloatTensor = _make("float32")
DoubleTensor = _make("float64")
HalfTensor = _make("float16")
LongTensor = _make("int64")
IntTensor = _make("int32")
ShortTensor = _make("int16")
CharTensor = _make("int8")
ByteTensor = _make("uint8")
BoolTensor = _make("bool")
