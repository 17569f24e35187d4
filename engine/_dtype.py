"""dtypes: thin named wrappers over NumPy dtypes, with torch's promotion rules."""

from __future__ import annotations

import numpy as np

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports them;
# ``bool_`` is imported there as ``bool``, a name a module of its own cannot define).
__all__ = ["bfloat16", "cdouble", "cfloat", "complex128", "complex64", "double", "dtype", "float", "float16", "float32",
           "float64", "get_default_dtype", "half", "int", "int16", "int32", "int64", "int8", "long",
           "set_default_dtype", "short", "uint8"]


class dtype:  # noqa: N801 - torch spells it lower-case
    """A tensor element type. ``str(engine.float32) == 'engine.float32'``."""

    __slots__ = ("name", "np", "is_floating_point", "is_complex", "itemsize")

    def __init__(self, name: str, np_dtype: type) -> None:
        self.name = name
        self.np = np.dtype(np_dtype)
        self.is_floating_point = self.np.kind == "f"
        self.is_complex = self.np.kind == "c"
        self.itemsize = self.np.itemsize

    def __repr__(self) -> str:
        return f"engine.{self.name}"

    def __reduce__(self):  # dtypes are singletons, also through copy/deepcopy
        return (_by_name, (self.name,))


float16 = dtype("float16", np.float16)
float32 = dtype("float32", np.float32)
float64 = dtype("float64", np.float64)
int8 = dtype("int8", np.int8)
uint8 = dtype("uint8", np.uint8)
int16 = dtype("int16", np.int16)
int32 = dtype("int32", np.int32)
int64 = dtype("int64", np.int64)
bool_ = dtype("bool", np.bool_)
# complex tensors: what engine.fft returns; .real/.imag/abs/angle, view_as_real/view_as_complex,
# conj, add/sub/mul/div and the fft ops handle them (with torch's conjugate-Wirtinger gradients)
complex64 = dtype("complex64", np.complex64)
complex128 = dtype("complex128", np.complex128)


class _TensorlessDtype(dtype):
    """A torch dtype the engine names but has no tensors of: NumPy has no such element type.

    The dtype itself is torch's (name, ``itemsize``, ``is_floating_point``; ``finfo`` gives its
    limits), so code that only names it (nanoGPT's ``{'bfloat16': torch.bfloat16, ...}``, a
    comparison with ``x.dtype``) runs. Asking for its NumPy type, which every tensor creation and
    conversion does (``.to(bfloat16)``, ``zeros(..., dtype=bfloat16)``), raises a TypeError naming
    it: silently computing in float32 would give numbers torch does not.
    """

    __slots__ = ("finfo",)

    def __init__(self, name: str, itemsize: int, finfo: dict) -> None:
        self.name, self.itemsize, self.finfo = name, itemsize, finfo
        self.is_floating_point, self.is_complex = True, False

    @property
    def np(self) -> np.dtype:  # type: ignore[override]
        raise TypeError(f"engine has no {self.name} tensors: NumPy has no {self.name} type. Use float32 "
                        f"(or float16) instead of engine.{self.name}")


# torch.finfo(torch.bfloat16): 8 exponent bits as float32, 7 stored mantissa bits
bfloat16 = _TensorlessDtype("bfloat16", 2, {"bits": 16, "eps": 2.0 ** -7, "max": (2 - 2.0 ** -7) * 2.0 ** 127,
                                            "smallest_normal": 2.0 ** -126, "resolution": 0.01})
half, float, double = float16, float32, float64  # noqa: A001 - torch's aliases
short, int, long = int16, int32, int64  # noqa: A001
cfloat, cdouble = complex64, complex128

_ALL = (float16, float32, float64, int8, uint8, int16, int32, int64, bool_)
# not in _ALL: serialization and the dtype tables built from _ALL do not handle complex yet
_FROM_NP = {d.np: d for d in (*_ALL, complex64, complex128)}
_NAMES = {d.name: d for d in (*_ALL, complex64, complex128, bfloat16)}

_default_float = float32


def _by_name(name: str) -> dtype:
    return _NAMES[name]


_SCALAR_TYPE = {"float16": "Half", "float32": "Float", "float64": "Double", "int8": "Char", "uint8": "Byte",
                "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool", "complex64": "ComplexFloat",
                "complex128": "ComplexDouble", "bfloat16": "BFloat16"}


def scalar_type_name(np_dtype) -> str:
    """torch's ScalarType spelling (``Float``, ``Long``), as its error messages use it."""
    return _SCALAR_TYPE.get(np.dtype(np_dtype).name, str(np_dtype))


def get_default_dtype() -> dtype:
    return _default_float


def set_default_dtype(d: dtype) -> None:
    global _default_float
    if not isinstance(d, dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    d.np  # noqa: B018 - raises for a dtype the engine has no tensors of (bfloat16)
    _default_float = d


def from_numpy_dtype(np_dtype) -> dtype:
    """The engine dtype for a NumPy dtype; raises TypeError for unsupported ones."""
    try:
        return _FROM_NP[np.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type {np.dtype(np_dtype)}. The only supported types "
            "are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
        ) from None


def to_numpy_dtype(d) -> np.dtype:
    """Accepts an engine dtype, a NumPy dtype, or a Python type (float/int/bool)."""
    if isinstance(d, dtype):
        return d.np
    if d is builtins_float:
        return _default_float.np
    if d is builtins_int:
        return np.dtype(np.int64)
    if d is builtins_bool:
        return np.dtype(np.bool_)
    return from_numpy_dtype(d).np


builtins_float, builtins_int, builtins_bool = (1.0).__class__, (1).__class__, True.__class__
builtins_complex = (1j).__class__
builtins_abs = abs


def _category(np_dtype: np.dtype) -> int:
    """0 bool, 1 integer, 2 floating, 3 complex: torch promotes across categories, not within 0-dim."""
    k = np_dtype.kind
    return 2 if k == "f" else 3 if k == "c" else 0 if k == "b" else 1


def result_type(a: np.ndarray, b) -> np.dtype:
    """torch's promotion for a binary op between array ``a`` and array-or-scalar ``b``.

    Python scalars and 0-dim tensors only promote when they are of a higher category
    (bool < int < float); then floats become the default dtype.
    """
    da = a.dtype
    if isinstance(b, np.ndarray):
        db = b.dtype
        if da == db:
            return da
        if (a.ndim == 0) == (b.ndim == 0):
            ca, cb = _category(da), _category(db)
            if ca != cb:  # across categories the higher one's dtype wins (float16 + int64 -> float16)
                if ca + cb == 5:  # float with complex: complex64 + float64 -> complex128
                    return np.promote_types(da, db)
                return da if ca > cb else db
            return np.promote_types(da, db)
        dim_t, zero_t = (da, db) if b.ndim == 0 else (db, da)
        return zero_t if _category(zero_t) > _category(dim_t) else dim_t
    if isinstance(b, builtins_complex):  # a Python complex: complex of the tensor's float precision
        return da if da.kind == "c" else np.promote_types(da if da.kind == "f" else _default_float.np, np.complex64)
    cat_b = 2 if isinstance(b, builtins_float) else 0 if isinstance(b, builtins_bool) else 1
    if cat_b > _category(da):
        return _default_float.np if cat_b == 2 else np.dtype(np.int64)
    return da


def _scalar_category(v) -> int:
    return 2 if isinstance(v, builtins_float) else 0 if isinstance(v, builtins_bool) else 1


def result_type_many(*operands) -> np.dtype:
    """torch's promotion over any number of arrays and Python numbers (``None`` skipped):
    dimensioned arrays, 0-dim arrays and Python numbers each promote within their group, and a
    later group only counts when it is of a higher category (bool < int < float)."""
    groups: list[np.dtype | None] = [None, None, None]  # dimensioned, 0-dim, Python numbers
    for v in operands:
        if v is None:
            continue
        if isinstance(v, np.ndarray):
            k, d = (0 if v.ndim else 1), v.dtype
        else:
            c = _scalar_category(v)
            k, d = 2, (_default_float.np if c == 2 else np.dtype(np.int64) if c == 1 else np.dtype(np.bool_))
        cur = groups[k]
        if cur is None or cur == d:
            groups[k] = d
        else:
            ca, cb = _category(cur), _category(d)
            groups[k] = np.promote_types(cur, d) if ca == cb else (cur if ca > cb else d)
    out = None
    for d in groups:
        if d is None:
            continue
        if out is None or _category(d) > _category(out):
            out = d
    return out if out is not None else _default_float.np


_C_TYPE = {"uint8": "uint8_t", "int8": "int8_t", "int16": "int16_t", "int32": "int", "int64": "int64_t",
           "bool": "bool", "float16": "c10::Half", "float32": "float", "float64": "double"}


def checked_scalar(v, np_dtype: np.dtype):
    """A Python number converted to ``np_dtype`` as torch's checked conversion does: integers
    out of range raise (unsigned types also accept negatives down to ``-max``, which wrap)."""
    if np_dtype.kind in "iu" and not isinstance(v, builtins_bool):
        info = np.iinfo(np_dtype)
        lo = -info.max if np_dtype.kind == "u" else info.min
        if not lo <= v <= info.max:
            raise RuntimeError(
                f"value cannot be converted to type {_C_TYPE[np_dtype.name]} without overflow")
        return np.array(v).astype(np_dtype)
    if np_dtype.kind == "f" and not isinstance(v, builtins_bool):
        big = builtins_float(np.finfo(np_dtype).max)
        if big < builtins_abs(v) < builtins_float("inf"):
            raise RuntimeError(
                f"value cannot be converted to type {_C_TYPE[np_dtype.name]} without overflow")
    return v
