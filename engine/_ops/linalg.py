"""Matrix products: mm, bmm, mv, dot, addmm, and matmul built from them as ``at::matmul`` does.

``matmul`` is not one node: like torch it folds batch dims into rows (reshape, mm, _unsafe_view)
or expands and calls bmm, so ``(x @ w).grad_fn`` and the graph below it read as torch's do.
"""

from __future__ import annotations

import numpy as np

from . import _core
from ._core import result
from .shape import _unsafe_view, contiguous, expand, mT, reshape, squeeze, t, unsqueeze


def _dims(x) -> str:
    return "x".join(map(str, x.shape))


def _check_2d(name: str, a, b) -> None:
    for arg, t_ in (("self", a), ("mat2", b)):
        if t_.ndim != 2:
            raise RuntimeError(f"{arg} must be a matrix" if name == "mm" else f"{name}: expected 2-D")
    if a.shape[1] != b.shape[0]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({_dims(a)} and {_dims(b)})"
        )
    if a._data.dtype != b._data.dtype:
        raise RuntimeError(
            f"expected m1 and m2 to have the same dtype, but got: "
            f"{_core._dtype.from_numpy_dtype(a._data.dtype).name} != "
            f"{_core._dtype.from_numpy_dtype(b._data.dtype).name}"
        )


def mm(a, b):
    _check_2d("mm", a, b)
    x, y = a._data, b._data
    ra, rb = a._requires_grad, b._requires_grad

    def backward(g):
        return (g @ y.T if ra else None, x.T @ g if rb else None)

    saved = [s for s, needed in ((b, ra), (a, rb)) if needed]
    return result(x @ y, "MmBackward0", (a, b), backward, saved=saved)


def addmm(bias, a, b, *, beta: float = 1, alpha: float = 1):
    """``beta * bias + alpha * (a @ b)``: the node ``F.linear`` records (``AddmmBackward0``)."""
    _check_2d("addmm", a, b)
    x, y, c = a._data, b._data, bias._data
    out = x @ y
    if alpha != 1:
        out *= alpha
    try:
        out += c if beta == 1 else beta * c
    except ValueError:
        raise RuntimeError(
            f"The expanded size of the tensor ({out.shape[-1]}) must match the existing size "
            f"({c.shape[-1] if c.ndim else 1}) at non-singleton dimension {out.ndim - 1}.  Target "
            f"sizes: {list(out.shape)}.  Tensor sizes: {list(c.shape)}"
        ) from None
    rc, ra, rb = bias._requires_grad, a._requires_grad, b._requires_grad
    c_shape = c.shape

    def backward(g):
        ga = g * alpha if alpha != 1 else g
        return (_core.unbroadcast(g * beta if beta != 1 else g, c_shape) if rc else None,
                ga @ y.T if ra else None,
                x.T @ ga if rb else None)

    saved = [s for s, needed in ((b, ra), (a, rb)) if needed]
    return result(out, "AddmmBackward0", (bias, a, b), backward, saved=saved)


def bmm(a, b):
    if a.ndim != 3 or b.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if a.ndim != 3 else "batch2 must be a 3D tensor")
    if b.shape[0] != a.shape[0] or b.shape[1] != a.shape[2]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{a.shape[0]}, {a.shape[2]}] but got: [{b.shape[0]}, {b.shape[1]}]."
        )
    x, y = a._data, b._data
    ra, rb = a._requires_grad, b._requires_grad

    def backward(g):
        return (g @ y.transpose(0, 2, 1) if ra else None, x.transpose(0, 2, 1) @ g if rb else None)

    saved = [s for s, needed in ((b, ra), (a, rb)) if needed]
    return result(x @ y, "BmmBackward0", (a, b), backward, saved=saved)


def mv(a, v):
    if a.ndim != 2 or v.ndim != 1 or a.shape[1] != v.shape[0]:
        raise RuntimeError(
            f"size mismatch, got input ({a.shape[0] if a.ndim else 0}), mat ({_dims(a)}), "
            f"vec ({v.shape[0] if v.ndim else 0})"
        )
    x, y = a._data, v._data
    ra, rb = a._requires_grad, v._requires_grad

    def backward(g):
        return (np.outer(g, y) if ra else None, x.T @ g if rb else None)

    saved = [s for s, needed in ((v, ra), (a, rb)) if needed]
    return result(x @ y, "MvBackward0", (a, v), backward, saved=saved)


def dot(a, b):
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors"
        )
    if a.shape != b.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to "
            f"have the same number of elements, but got {a.shape[0]} and {b.shape[0]} elements "
            "respectively"
        )
    x, y = a._data, b._data
    return result(np.asarray(x @ y), "DotBackward0", (a, b),
                  lambda g: (g * y, g * x), saved=(a, b))


def matmul(a, b):
    """``a @ b`` with torch's decomposition by operand ranks."""
    b = _core.to_tensor(b)
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(a, b)
    if da == 2 and db == 1:
        return mv(a, b)
    if da == 1 and db == 2:
        return squeeze(mm(unsqueeze(a, 0), b), 0, node_name="SqueezeBackward4")
    if da == 2 and db == 2:
        return mm(a, b)
    if da >= 3 and db in (1, 2):
        return _fold_left(a, b)
    if da in (1, 2) and db == 3:
        return _fold_right(a, b)
    return _batched(a, b)


def _fold_left(a, b):
    """(..., n, k) @ (k,) or (k, m): rows of every batch into one mm."""
    k = a.shape[-1]
    if b.shape[0] != k:
        raise _mismatch(a, b)
    folded = reshape(a, -1, k)
    out = mm(folded, b) if b.ndim == 2 else mv(folded, b)
    out_shape = a.shape[:-1] + (b.shape[1],) if b.ndim == 2 else a.shape[:-1]
    return _unsafe_view(out, out_shape)


def _fold_right(a, b):
    """(n, k) or (k,) @ (B, k, m): computed as (b^T @ a^T)^T, the way torch folds it."""
    if a.shape[-1] != b.shape[-2]:
        raise _mismatch(a, b)
    if a.ndim == 1:
        return _fold_left(mT(b), a)
    return contiguous(mT(_fold_left(mT(b), t(a))))


def _batched(a, b):
    a1 = unsqueeze(a, 0) if a.ndim == 1 else a
    b1 = unsqueeze(b, -1) if b.ndim == 1 else b
    n, k = a1.shape[-2:]
    k2, m = b1.shape[-2:]
    try:  # torch checks the batch dims first
        batch = np.broadcast_shapes(a1.shape[:-2], b1.shape[:-2])
    except ValueError:
        raise _core.broadcast_error(a1.shape[:-2], b1.shape[:-2]) from None
    if k != k2:
        raise _mismatch(a, b)
    size = int(np.prod(batch)) if batch else 1
    ea = reshape(expand(a1, batch + (n, k)), size, n, k)
    eb = reshape(expand(b1, batch + (k, m)), size, k, m)
    out_shape = batch + ((n,) if a.ndim > 1 else ()) + ((m,) if b.ndim > 1 else ())
    return _unsafe_view(bmm(ea, eb), out_shape)


def _mismatch(a, b) -> RuntimeError:
    if b.ndim == 1:
        return RuntimeError(
            f"size mismatch, got input ({a.shape[-2] if a.ndim > 1 else 1}), "
            f"mat ({_dims(a)}), vec ({b.shape[0]})"
        )
    a2 = a.shape if a.ndim > 1 else (1,) + a.shape
    return RuntimeError(
        f"mat1 and mat2 shapes cannot be multiplied ({int(np.prod(a2[:-1]))}x{a2[-1]} and "
        f"{b.shape[-2]}x{b.shape[-1]})"
    )
