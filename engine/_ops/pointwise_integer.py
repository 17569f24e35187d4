"""Pointwise ops on integers: ``gcd``, ``lcm`` and the bit shifts
``bitwise_left_shift``/``bitwise_right_shift`` (with torch's saturation past the bit width).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

import engine._ops._core as _core
import engine._ops.pointwise as pointwise

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["bitwise_left_shift", "bitwise_right_shift", "gcd", "lcm"]


def _integer_binary(name: str, fn: Callable) -> Callable:
    def op(input, other):  # noqa: A002
        pointwise._tensor_only(name, input, other)
        x, y, _, dt = pointwise._binary_operands(input, other)
        if dt.kind not in "iu":
            raise pointwise._not_implemented(f"{name}_cpu", dt)
        return _core.Tensor._wrap(pointwise._compute(fn, x, y, dt))

    op.__name__ = name
    op.__doc__ = f"Element-wise {name} of two integer tensors (torch's {name}; no gradient)."
    return op


gcd = _integer_binary("gcd", np.gcd)


lcm = _integer_binary("lcm", np.lcm)


def _shift(name: str, kernel: str, left: bool) -> Callable:
    def op(input, other):  # noqa: A002
        if not isinstance(input, _core.Tensor):  # torch.bitwise_left_shift(2, t)
            x, y, dt = pointwise._reversed(other, input)
        else:
            x, y, _, dt = pointwise._binary_operands(input, other)
        if dt.kind not in "iu":
            raise pointwise._not_implemented(kernel, dt)
        bits = dt.itemsize * 8
        y_arr = np.asarray(y, dtype=np.int64)
        if left:  # shifting every bit out gives 0, as torch's kernel does
            out = np.where(y_arr >= bits, 0, np.left_shift(x, np.minimum(y_arr, bits - 1).astype(dt)))
        else:  # arithmetic shift: past the width, 0 or -1 by sign
            out = np.right_shift(x, np.minimum(y_arr, bits - 1).astype(dt))
        return _core.Tensor._wrap(np.asarray(out, dtype=dt))

    op.__name__ = name
    op.__doc__ = f"torch.{name}: integer tensors only; shifts of the whole width or more saturate as torch's."
    return op


bitwise_left_shift = _shift("bitwise_left_shift", "lshift_cpu", True)


bitwise_right_shift = _shift("bitwise_right_shift", "rshift_cpu", False)
