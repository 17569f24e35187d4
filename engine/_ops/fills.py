"""The checks and NumPy kernels behind Tensor's in-place fills: ``fill_diagonal_`` and the
ranges and dtype checks of ``random_``/``exponential_``/... (the methods are in
``_tensor_methods.py``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops._core as _core


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


def fill_diagonal_values(x: np.ndarray, value: Any, wrap: bool) -> np.ndarray:
    """A copy of ``x`` with its main diagonal set to ``value`` (torch's ``fill_diagonal_``)."""
    if x.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if x.ndim > 2 and len(set(x.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    out = x.copy()
    if x.ndim == 2 and wrap and x.shape[0] > x.shape[1] + 1:
        # the diagonal restarts below a full square: every (cols + 1)-th element of the flat array
        out.reshape(-1)[::x.shape[1] + 1] = value
        return out
    i = np.arange(min(x.shape))
    out[(i,) * x.ndim] = value
    return out


_RANDOM_TOP = {"float16": 2**11, "float32": 2**24, "float64": 2**53, "int8": 2**7, "int16": 2**15,
               "int32": 2**31, "uint8": 2**8, "bool": 2}


def random_bounds(dt: np.dtype, start: Any, end: Any) -> tuple[int, int]:
    """``random_(from, to)``'s half-open range: ``random_()`` spans [0, 2**mantissa] for floats
    and the non-negative range for integers; ``random_(to)`` is [0, to)."""
    if end is None and start is not None and start != 0:
        start, end = 0, start
    lo = 0 if start is None else int(start)
    if end is None:
        hi = _RANDOM_TOP.get(dt.name, 2**63 - 1) + (1 if dt.kind == "f" else 0)
    else:
        hi = int(end)
    if lo >= hi:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={lo} >= to={hi}")
    return lo, hi


def check_float_fill(name: str, dt: np.dtype, dist: str) -> None:
    if dt.kind != "f":
        raise RuntimeError(f"{dist} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_type_name(dt)}")
