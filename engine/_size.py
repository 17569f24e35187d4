"""Shapes and dims: ``engine.Size``, torch's ways of passing sizes, and dim wrapping with torch's errors."""

from __future__ import annotations

import math
from collections.abc import Sequence


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``engine.Size([2, 3])``."""

    def __repr__(self) -> str:
        return f"engine.Size({list(self)})"

    def __getitem__(self, key):  # type: ignore[override]
        out = tuple.__getitem__(self, key)
        return Size(out) if isinstance(key, slice) else out

    def numel(self) -> int:
        return math.prod(self)


def sizes(args: Sequence) -> tuple[int, ...]:
    """Accept ``f(2, 3)``, ``f((2, 3))`` and ``f([2, 3])``, as torch does."""
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    return tuple(map(int, args))  # (map: no generator frame per call; this runs for every view and creation)


def wrap_dim(dim: int, ndim: int) -> int:
    """Normalise a possibly negative ``dim`` with torch's error for out-of-range ones."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % ndim if ndim > 0 else 0



def broadcast_error(a: tuple, b: tuple) -> RuntimeError:
    """torch's message for shapes that do not broadcast, naming the first clashing dim."""
    n = max(len(a), len(b))
    pa, pb = (1,) * (n - len(a)) + tuple(a), (1,) * (n - len(b)) + tuple(b)
    for i in range(n - 1, -1, -1):
        if pa[i] != pb[i] and pa[i] != 1 and pb[i] != 1:
            return RuntimeError(
                f"The size of tensor a ({pa[i]}) must match the size of tensor b ({pb[i]}) "
                f"at non-singleton dimension {i}"
            )
    return RuntimeError(f"shapes {list(a)} and {list(b)} cannot be broadcast")
