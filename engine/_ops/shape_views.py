"""Shape and layout ops beside ``shape.py``'s core: ``unfold`` (a strided view), ``rot90``,
``fliplr``/``flipud``, ``ravel``, ``swapdims``, ``adjoint``/``mT``/``mH``, the ``h/v/dsplit``
family, ``split_with_sizes``, ``narrow_copy``, ``sum_to_size`` and ``dim_order``.

Most are composed of ``shape.py``'s views (``fliplr`` is ``flip``, ``ravel`` is ``reshape``), so
their graphs read as torch's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

import engine._ops._core as _core
import engine._ops.shape as _shape

from ._core import result, wrap_dim
from .fft import conj
from .reduction import sum as _sum

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["dsplit", "fliplr", "flipud", "hsplit", "ravel", "rot90", "split_with_sizes", "swapdims", "vsplit"]


def _windows(arr: np.ndarray, d: int, size: int, step: int) -> np.ndarray:
    w = np.lib.stride_tricks.sliding_window_view(arr, size, axis=d, writeable=arr.flags.writeable)
    return w[(slice(None),) * d + (slice(None, None, step),)]


def unfold(input, dimension: int, size: int, step: int):  # noqa: A002
    """The view of every ``size``-long window along ``dimension``, ``step`` apart; the windows
    become a new last dim (``Tensor.unfold``)."""
    x = input._data
    d = wrap_dim(dimension, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if size > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is {size}")
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    if x.ndim == 0:
        def view_fn(arr):
            return (arr.reshape(1))
        return _shape.view_op(input, view_fn(x), "UnfoldBackward0",
                              lambda g: (g.reshape(()).copy(),), view_fn)
    in_shape = x.shape
    count = (n - size) // step + 1

    def backward(g):
        gx = np.zeros(in_shape, g.dtype)
        for j in range(size):  # one strided add per window offset (windows may overlap)
            sl = (slice(None),) * d + (slice(j, j + (count - 1) * step + 1, step),)
            gx[sl] += g[..., j]
        return (gx,)

    def view_fn(arr):
        return _windows(arr, d, size, step)

    return _shape.view_op(input, view_fn(x), "UnfoldBackward0", backward, view_fn)


def rot90(input, k: int = 1, dims=(0, 1)):  # noqa: A002
    """Rotate by 90 degrees ``k`` times in the plane ``dims`` (from the first towards the
    second)."""
    dims = list(dims)
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = wrap_dim(dims[0], input.ndim), wrap_dim(dims[1], input.ndim)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and dim1 = {d1}")
    def backward(g):
        return (np.rot90(g, -k, (d0, d1)),)

    return result(np.rot90(input._data, k, (d0, d1)).copy(), "Rot90Backward0", (input,), backward,
                  tensor_backward=_core.linear_backward("Rot90Backward0", backward,
                                                        lambda arr: np.rot90(arr, k, (d0, d1))))


def fliplr(input):  # noqa: A002
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _shape.flip(input, 1)


def flipud(input):  # noqa: A002
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _shape.flip(input, 0)


def ravel(input):  # noqa: A002
    """The flattened tensor (a view when possible): ``reshape(-1)``."""
    return _shape.reshape(input, (-1,))


def swapdims(input, dim0: int, dim1: int):  # noqa: A002
    return _shape.transpose(input, dim0, dim1)


def _split_family(name: str, dim: int, min_dims: int) -> Callable:
    def op(input, indices_or_sections):  # noqa: A002
        if input.ndim < min_dims:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {min_dims} dimension, but got a "
                               f"tensor with {input.ndim} dimensions!")
        d = 0 if name == "hsplit" and input.ndim == 1 else dim
        ios = indices_or_sections
        if isinstance(ios, int | np.integer) and not isinstance(ios, bool):
            n = input.shape[d]
            if ios == 0 or n % ios:
                raise RuntimeError(f"torch.{name} attempted to split along dimension {d}, but the size of the "
                                   f"dimension {n} is not divisible by the split_size {ios}!")
        return _shape.tensor_split(input, ios, d)

    op.__name__ = name
    op.__doc__ = (f"torch.{name}: ``tensor_split`` along dim {dim} (dim 0 for a 1-D ``hsplit``); an int must "
                  "divide that dim evenly.")
    return op


hsplit = _split_family("hsplit", 1, 1)


vsplit = _split_family("vsplit", 0, 2)


dsplit = _split_family("dsplit", 2, 3)


def split_with_sizes(input, split_sizes: Sequence[int], dim: int = 0):  # noqa: A002
    """Split into pieces of the given sizes, which must sum to the size of ``dim``."""
    return _shape.split(input, list(split_sizes), dim)


def sum_to_size(input, *size):  # noqa: A002
    """Sum ``input`` down to ``size``, which must broadcast (expand) to ``input``'s _shape."""
    target = tuple(_shape._sizes(size))
    have = tuple(input.shape)
    expandable = len(target) <= len(have) and all(
        t == h or t == 1 for t, h in zip(target[::-1], have[::-1]))
    if not expandable:
        raise RuntimeError(f"size {{{list(target)}}} is not expandable to size {{{list(have)}}}.")
    if target == have:
        return input
    lead = len(have) - len(target)
    dims = tuple(range(lead)) + tuple(i + lead for i, t in enumerate(target) if t == 1 and have[i + lead] != 1)
    out = _sum(input, dims, keepdim=True) if dims else input
    return _shape.view(out, target) if lead else out


def hermitian_t(input):  # noqa: A002
    """``Tensor.H``: the conjugate transpose of a matrix (a 2-D tensor; 0-D passes through)."""
    if input.ndim not in (0, 2):
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {input.ndim}-D tensor."
                           + (" For batches of matrices, consider using tensor.mH" if input.ndim > 2 else ""))
    return _conj_if_complex(_shape.transpose(input, 0, 1) if input.ndim == 2 else input)


def hermitian_mt(input):  # noqa: A002
    """``Tensor.mH``: the conjugate transpose of the last two dims."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.mH is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return _conj_if_complex(_shape.transpose(input, -2, -1))


def _conj_if_complex(t):
    if t._data.dtype.kind != "c":
        return t
    return conj(t)


def adjoint(input):  # noqa: A002
    """The conjugate transpose of the last two dims (``mH`` with torch's ``adjoint`` message)."""
    if input.ndim < 2:
        raise RuntimeError(f"tensor.adjoint() is only supported on matrices or batches of matrices. Got "
                           f"{input.ndim}-D tensor.")
    return hermitian_mt(input)


def dim_order(input) -> tuple[int, ...]:  # noqa: A002
    """Dims from the outermost in memory (largest stride) to the innermost, as torch's."""
    strides = input.stride()
    return tuple(sorted(range(input.ndim), key=lambda d: -strides[d]))


def narrow_copy(input, dim: int, start: int, length: int):  # noqa: A002
    """``narrow`` as a new contiguous tensor."""
    return _shape.contiguous(_shape.clone(_shape.narrow(input, dim, start, length)))
