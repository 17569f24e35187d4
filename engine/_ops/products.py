"""Products beyond ``mm``/``matmul`` (``linalg.py``): ``kron``, ``tensordot``, ``trace``,
``inner``, ``vdot`` and the fused multiply-adds ``baddbmm``/``addbmm``/``addmv``/``addr``.

Where torch composes an op from others (``tensordot`` is ``permute``/``mm``/``view``, ``inner`` is
``tensordot`` over the last dims) it is composed the same way here, so the graph and its
``grad_fn`` read as torch's; the rest carry their own NumPy backward.
"""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core
import engine._ops.linalg as linalg
import engine._ops.pointwise as pointwise
import engine._ops.shape as _shape

from ._core import result, unbroadcast, wrap_dim
from .linalg import dot, mm

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["addbmm", "addmv", "addr", "baddbmm", "inner", "kron", "tensordot", "trace", "vdot"]


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


def kron(input, other):
    """The Kronecker product; both are padded with leading 1-dims to the same rank. Built as
    torch builds it (a broadcast ``mul`` then ``_unsafe_view``)."""
    n = max(input.ndim, other.ndim)
    sa = (1,) * (n - input.ndim) + tuple(input.shape)
    sb = (1,) * (n - other.ndim) + tuple(other.shape)
    ia = sum(((s, 1) for s in sa), ())
    ib = sum(((1, s) for s in sb), ())
    prod = pointwise.mul(_shape.reshape(input, ia), _shape.reshape(other, ib))
    return _shape._unsafe_view(_shape.contiguous(prod), tuple(x * y for x, y in zip(sa, sb)))


def tensordot(a, b, dims=2, out=None):
    """Contract ``dims`` (an int: the last ``dims`` of ``a`` with the first of ``b``; or two
    lists of dims) by permuting, flattening, ``mm`` and reshaping, as torch does."""
    if isinstance(dims, _core.Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = dims
        da = [da] if isinstance(da, int) else list(da)
        db = [db] if isinstance(db, int) else list(db)
        if len(da) != len(db):
            raise RuntimeError("both dimension lists should have same length")
    da = [wrap_dim(d, a.ndim) for d in da]
    db = [wrap_dim(d, b.ndim) for d in db]
    for x, y, ox, oy in zip(da, db, dims[0] if not isinstance(dims, int) else da,
                            dims[1] if not isinstance(dims, int) else db):
        if a.shape[x] != b.shape[y]:
            ox = x if isinstance(dims, int) else ox
            oy = y if isinstance(dims, int) else oy
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[x]} in dim "
                               f"{ox - a.ndim if isinstance(dims, int) else ox} and second has size "
                               f"{b.shape[y]} in dim {oy}")
    ra = [d for d in range(a.ndim) if d not in da]
    rb = [d for d in range(b.ndim) if d not in db]
    k = int(np.prod([a.shape[d] for d in da]))
    ma = _shape.reshape(_shape.permute(a, ra + da), (int(np.prod([a.shape[d] for d in ra])), k))
    mb = _shape.reshape(_shape.permute(b, db + rb), (k, int(np.prod([b.shape[d] for d in rb]))))
    return _shape.reshape(mm(ma, mb), [a.shape[d] for d in ra] + [b.shape[d] for d in rb])


def trace(a):
    """The sum of the main diagonal of a matrix."""
    x = a._data
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    shape = x.shape

    def backward(g):
        gx = np.zeros(shape, g.dtype)
        np.fill_diagonal(gx, g)
        return (gx,)

    out = np.trace(x)
    return result(np.asarray(out, x.dtype if x.dtype.kind == "f" else np.int64), "TraceBackward0", (a,), backward,
                  tensor_backward=_core.linear_backward("TraceBackward0", backward, np.trace))


def _scaled_sum(inp, prod, beta, alpha, in_shape):
    """``beta * input + alpha * prod`` where ``beta == 0`` ignores ``input`` (NaNs included)."""
    p = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return p.astype(prod.dtype, copy=False)
    i = np.broadcast_to(inp, prod.shape)
    return (p + (i if beta == 1 else i * beta)).astype(prod.dtype, copy=False)


def _in_grad(g, beta, in_shape):
    return unbroadcast(g if beta == 1 else g * beta, in_shape)


def _expand_check(in_shape, out_shape):
    try:
        np.broadcast_shapes(in_shape, out_shape)
    except ValueError:
        lead = len(out_shape) - len(in_shape)
        for i in range(len(in_shape) - 1, -1, -1):
            if in_shape[i] != 1 and in_shape[i] != out_shape[lead + i]:
                raise RuntimeError(
                    f"The expanded size of the tensor ({out_shape[lead + i]}) must match the existing size "
                    f"({in_shape[i]}) at non-singleton dimension {lead + i}.  Target sizes: {list(out_shape)}.  "
                    f"Tensor sizes: {list(in_shape)}") from None
        raise


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002 - torch's names
    """``beta * input + alpha * (batch1 @ batch2)`` over a batch of matrices."""
    x, b1, b2 = input._data, batch1._data, batch2._data
    if b1.ndim >= 2 and b2.ndim >= 1:  # torch checks that input expands before the batches' shapes
        _expand_check(x.shape, (b1.shape[0], b1.shape[1], b2.shape[-1]))
    _bmm_check(b1, b2)
    prod = b1 @ b2
    in_shape = x.shape

    def backward(g):
        ga = g if alpha == 1 else g * alpha
        return _in_grad(g, beta, in_shape), ga @ np.swapaxes(b2, -1, -2), np.swapaxes(b1, -1, -2) @ ga

    return result(_scaled_sum(x, prod, beta, alpha, in_shape), "BaddbmmBackward0", (input, batch1, batch2),
                  backward, saved=(batch1, batch2))


def _bmm_check(b1, b2):
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if b2.shape[:2] != (b1.shape[0], b1.shape[2]):
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{b1.shape[0]}, {b1.shape[2]}] but got: [{b2.shape[0]}, {b2.shape[1]}].")


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * sum_b batch1[b] @ batch2[b]``."""
    x, b1, b2 = input._data, batch1._data, batch2._data
    if b1.ndim >= 2 and b2.ndim >= 1:
        _expand_check(x.shape, (b1.shape[-2], b2.shape[-1]))
    for name, b in (("batch1", b1), ("batch2", b2)):
        if b.ndim != 3:
            raise RuntimeError(f"{name} must be a 3D tensor")
    if b1.shape[0] != b2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {b1.shape[0]} and {b2.shape[0]}")
    if b1.shape[2] != b2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({b1.shape[1]}x{b1.shape[2]} and "
                           f"{b2.shape[1]}x{b2.shape[2]})")
    prod = np.einsum("bij,bjk->ik", b1, b2)
    in_shape = x.shape

    def backward(g):
        ga = g if alpha == 1 else g * alpha
        return (_in_grad(g, beta, in_shape), np.einsum("ik,bjk->bij", ga, b2),
                np.einsum("bij,ik->bjk", b1, ga))

    return result(_scaled_sum(x, prod, beta, alpha, in_shape), "AddbmmBackward0", (input, batch1, batch2),
                  backward, saved=(batch1, batch2))


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * (mat @ vec)``."""
    x, m, v = input._data, mat._data, vec._data
    if m.ndim != 2 or v.ndim != 1 or m.shape[1] != v.shape[0] or x.shape not in ((), (1,), (m.shape[0],)):
        raise RuntimeError(f"size mismatch, got input ({'x'.join(map(str, x.shape))}), mat "
                           f"({'x'.join(map(str, m.shape))}), vec ({'x'.join(map(str, v.shape))})")
    in_shape = x.shape

    def backward(g):
        ga = g if alpha == 1 else g * alpha
        return _in_grad(g, beta, in_shape), np.outer(ga, v), ga @ m

    return result(_scaled_sum(x, m @ v, beta, alpha, in_shape), "AddmvBackward0", (input, mat, vec), backward,
                  saved=(mat, vec))


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """``beta * input + alpha * outer(vec1, vec2)``."""
    x, v1, v2 = input._data, vec1._data, vec2._data
    for name, v in (("vec1", v1), ("vec2", v2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {v.ndim}-D")
    prod = np.outer(v1, v2)
    _expand_check(x.shape, prod.shape)
    in_shape = x.shape

    def backward(g):
        ga = g if alpha == 1 else g * alpha
        return _in_grad(g, beta, in_shape), ga @ v2, v1 @ ga

    return result(_scaled_sum(x, prod, beta, alpha, in_shape), "AddrBackward0", (input, vec1, vec2), backward,
                  saved=(vec1, vec2))


def inner(input, other):  # noqa: A002
    """The inner product over the last dims (``tensordot`` over them; ``mul`` with a 0-dim)."""
    if input.ndim == 0 or other.ndim == 0:
        return pointwise.mul(input, other)
    if input.ndim == 1 and other.ndim == 1:
        return dot(input, other)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):  # noqa: A002
    """The dot product of two 1-D tensors of one dtype (conjugating ``input``, a no-op for
    the real tensors the engine's matmul supports)."""
    pointwise._tensor_only("vdot", input, other)
    if input.ndim == 1 and other.ndim == 1 and input._data.dtype != other._data.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found "
                           f"{_type_name(input._data.dtype)} and {_type_name(other._data.dtype)}")
    if input.ndim != 1 or other.ndim != 1 or input.shape != other.shape:
        linalg.dot(input, other)  # raises torch's message for the shapes
    x, y = input._data, other._data
    return result(np.asarray(x @ y), "VdotBackward0", (input, other), lambda g: (g * y, g * x),
                  saved=(input, other), tensor_backward=lambda g: (pointwise.mul(g, other), pointwise.mul(g, input)))
