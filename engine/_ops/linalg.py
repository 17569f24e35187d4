"""Matrix products: mm, bmm, mv, dot, addmm, and matmul built from them as ``at::matmul`` does.

``matmul`` is not one node: like torch it folds batch dims into rows (reshape, mm, _unsafe_view)
or expands and calls bmm, so ``(x @ w).grad_fn`` and the graph below it read as torch's do.
"""

from __future__ import annotations

import warnings

import numpy as np

import engine._ops._core as _core

from ._core import result
from .pointwise import mul
from .shape import _unsafe_view, contiguous, expand, mT, reshape, squeeze, t, unsqueeze

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["addmm", "bmm", "cdist", "cross", "dot", "einsum", "ger", "matmul", "mm", "mv", "outer"]


def _same_dtype(tensors) -> None:
    """torch's error when operands that must share a dtype do not."""
    first = tensors[0]._data.dtype
    for t_ in tensors[1:]:
        if t_._data.dtype != first:
            name = _core._dtype.scalar_type_name
            raise RuntimeError(f"expected scalar type {name(first)} but found {name(t_._data.dtype)}")


_BLAS_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _mm(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``x @ y`` for 2-D arrays. When both are float32/float64 and contiguous (in either order,
    so a transposed weight counts) ``ndarray.dot`` makes the same BLAS call as ``@`` (the same
    values, bit for bit: checked on 1,750 shapes and layouts) for about half of ``@``'s fixed
    cost, which is what a small layer pays; anything else goes through ``@``."""
    if (x.dtype is y.dtype and x.dtype in _BLAS_FLOATS and (x.flags.c_contiguous or x.flags.f_contiguous)
            and (y.flags.c_contiguous or y.flags.f_contiguous)):
        return x.dot(y)
    return x @ y


def _dims(x) -> str:
    return "x".join(map(str, x.shape))


def _check_2d(name: str, a, b) -> None:
    x, y = a._data, b._data
    if x.ndim == 2 and y.ndim == 2 and x.shape[1] == y.shape[0] and x.dtype == y.dtype:
        return  # the common case in two tests on the arrays (runs for every linear layer call)
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


def mm(input, mat2):
    _check_2d("mm", input, mat2)
    x, y = input._data, mat2._data
    _core.no_complex("mm", x, y)
    ra, rb = input._requires_grad, mat2._requires_grad

    def backward(g):
        return (_mm(g, y.T) if ra else None, _mm(x.T, g) if rb else None)

    def tensor_backward(g):
        return (mm(g, t(mat2)) if ra else None, mm(t(input), g) if rb else None)

    saved = [s for s, needed in ((mat2, ra), (input, rb)) if needed]
    return result(_mm(x, y), "MmBackward0", (input, mat2), backward, saved=saved, tensor_backward=tensor_backward)


def addmm(bias, a, b, *, beta: float = 1, alpha: float = 1):
    """``beta * bias + alpha * (a @ b)``: the node ``F.linear`` records (``AddmmBackward0``)."""
    _check_2d("addmm", a, b)
    x, y, c = a._data, b._data, bias._data
    out = _mm(x, y)
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
                _mm(ga, y.T) if ra else None,
                _mm(x.T, ga) if rb else None)

    def tensor_backward(g):
        ga = g * alpha if alpha != 1 else g
        return (_core.sum_to(g * beta if beta != 1 else g, c_shape) if rc else None,
                mm(ga, t(b)) if ra else None,
                mm(t(a), ga) if rb else None)

    saved = [s for s, needed in ((b, ra), (a, rb)) if needed]
    return result(out, "AddmmBackward0", (bias, a, b), backward, saved=saved, tensor_backward=tensor_backward)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor" if input.ndim != 3 else "batch2 must be a 3D tensor")
    if mat2.shape[0] != input.shape[0] or mat2.shape[1] != input.shape[2]:
        raise RuntimeError(
            f"Expected size for first two dimensions of batch2 tensor to be: "
            f"[{input.shape[0]}, {input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}]."
        )
    x, y = input._data, mat2._data
    _core.no_complex("bmm", x, y)
    ra, rb = input._requires_grad, mat2._requires_grad

    def backward(g):
        return (g @ y.transpose(0, 2, 1) if ra else None, x.transpose(0, 2, 1) @ g if rb else None)

    def tensor_backward(g):
        return (bmm(g, mT(mat2)) if ra else None, bmm(mT(input), g) if rb else None)

    saved = [s for s, needed in ((mat2, ra), (input, rb)) if needed]
    return result(x @ y, "BmmBackward0", (input, mat2), backward, saved=saved, tensor_backward=tensor_backward)


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

    def tensor_backward(g):
        return (unsqueeze(g, 1) * unsqueeze(v, 0) if ra else None, mv(t(a), g) if rb else None)

    saved = [s for s, needed in ((v, ra), (a, rb)) if needed]
    return result(x @ y, "MvBackward0", (a, v), backward, saved=saved, tensor_backward=tensor_backward)


def dot(input, tensor):
    if input.ndim != 1 or tensor.ndim != 1:
        raise RuntimeError(
            f"1D tensors expected, but got {input.ndim}D and {tensor.ndim}D tensors"
        )
    if input.shape != tensor.shape:
        raise RuntimeError(
            f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src [{tensor.shape[0]}] to "
            f"have the same number of elements, but got {input.shape[0]} and {tensor.shape[0]} elements "
            "respectively"
        )
    x, y = input._data, tensor._data
    return result(np.asarray(x @ y), "DotBackward0", (input, tensor),
                  lambda g: (g * y, g * x), saved=(input, tensor), tensor_backward=lambda g: (g * tensor, g * input))


def matmul(input, other):
    """``a @ b`` with torch's decomposition by operand ranks."""
    other = _core.to_tensor(other)
    _core.no_complex("matmul", input._data, other._data)
    da, db = input.ndim, other.ndim
    if da == 0 or db == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D"
        )
    if da == 1 and db == 1:
        return dot(input, other)
    if da == 2 and db == 1:
        return mv(input, other)
    if da == 1 and db == 2:
        return squeeze(mm(unsqueeze(input, 0), other), 0, node_name="SqueezeBackward4")
    if da == 2 and db == 2:
        return mm(input, other)
    if da >= 3 and db in (1, 2):
        return _fold_left(input, other)
    if da in (1, 2) and db == 3:
        return _fold_right(input, other)
    return _batched(input, other)


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


# --- outer, cross, cdist, einsum -------------------------------------------------------------------


def outer(input, vec2):
    """``a[:, None] * b`` (torch's decomposition: ``MulBackward0`` over a view)."""
    for name, v in (("self", input), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {name}, but got {v.ndim}-D")
    return mul(reshape(input, -1, 1), vec2)


def cross(input, other, dim=None):
    """The cross product along ``dim`` (a dim of length 3; ``None`` picks the first such dim,
    as ``torch.cross`` does), broadcasting the other dims."""
    _same_dtype((input, other))
    x, y = input._data, other._data
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise _core.broadcast_error(x.shape, y.shape) from None
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the "
                      "dim explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to "
                      "agree with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dims3 = [i for i, n in enumerate(shape) if n == 3]
        if not dims3:
            raise RuntimeError("no dimension of size 3 in input")
        dim = dims3[0]
    d = _core.wrap_dim(dim, len(shape))
    xd = x.shape[d - len(shape) + x.ndim] if d - len(shape) + x.ndim >= 0 else 1
    yd = y.shape[d - len(shape) + y.ndim] if d - len(shape) + y.ndim >= 0 else 1
    if xd != 3 or yd != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {d} must have length 3. Got {xd} and {yd}")
    xb, yb = np.broadcast_to(x, shape), np.broadcast_to(y, shape)

    def backward(g):
        return (_core.unbroadcast(np.cross(yb, g, axis=d), x.shape),
                _core.unbroadcast(np.cross(g, xb, axis=d), y.shape))

    return result(np.cross(xb, yb, axis=d), "LinalgCrossBackward0", (input, other), backward, saved=(input, other))


def cdist(x1, x2, p: float = 2.0, compute_mode=None):
    """Pairwise p-norm distances between the rows of ``x1`` (..., P, M) and ``x2`` (..., R, M)
    -> (..., P, R), batch dims broadcast; ``p`` may be 0 or ``inf``."""
    for name, v in (("X1", x1), ("X2", x2)):
        if v.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {v.ndim}D")
    a, b = x1._data, x2._data
    if a.shape[-1] != b.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {a.shape[-1]} "
                           f"X2: {b.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    _same_dtype((x1, x2))
    diff = a[..., :, None, :] - b[..., None, :, :]
    ad = np.abs(diff)
    if p == 0:
        out = (ad != 0).sum(-1).astype(diff.dtype)
    elif p == float("inf"):
        out = ad.max(-1) if ad.shape[-1] else np.zeros(ad.shape[:-1], ad.dtype)
    elif p == 1:
        out = ad.sum(-1)
    elif p == 2:
        out = np.sqrt((diff * diff).sum(-1))
    else:
        out = (ad ** p).sum(-1) ** (1.0 / p)

    def backward(g):
        d_ = out[..., None]
        with np.errstate(divide="ignore", invalid="ignore"):
            if p == 0:
                per = np.zeros_like(diff)
            elif p == 1:
                per = np.sign(diff)
            elif p == 2:
                per = np.where(d_ == 0, 0, diff / d_)
            elif p == float("inf"):
                per = np.sign(diff) * (ad == d_)
            else:
                per = np.where(d_ == 0, 0, np.sign(diff) * ad ** (p - 1) / d_ ** (p - 1))
        per = per * g[..., None]
        return (_core.unbroadcast(per.sum(-2), a.shape), _core.unbroadcast(-per.sum(-3), b.shape))

    return result(np.ascontiguousarray(out), "CdistBackward0", (x1, x2), backward, saved=(x1, x2),
                  save_output=True)


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def _parse_einsum(equation: str, arrays: list) -> tuple[list[str], str]:
    """Explicit per-operand subscripts (``...`` replaced by spare letters, right-aligned) and
    the output subscripts, with torch's errors for malformed equations."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) > len(arrays):
        raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
    if len(terms) < len(arrays):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    for i, ch in enumerate(eq):
        if not (ch in _LETTERS or ch in ".,->"):
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
    spare = [c for c in _LETTERS if c not in eq]
    n_ell = 0
    for k, (term, x) in enumerate(zip(terms, arrays)):
        named = len(term.replace("...", ""))
        if "..." not in term and named != x.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) does not match the "
                f"number of dimensions ({x.ndim}) for operand {k} and no ellipsis was given")
        if "..." in term and named > x.ndim:
            raise RuntimeError(
                f"einsum(): the number of subscripts in the equation ({named}) is more than the "
                f"number of dimensions ({x.ndim}) for operand {k}")
        if "..." in term:
            n_ell = max(n_ell, x.ndim - named)
    ell = "".join(spare[:n_ell])
    explicit = []
    for term, x in zip(terms, arrays):
        k = x.ndim - len(term.replace("...", ""))
        explicit.append(term.replace("...", ell[n_ell - k:] if k else ""))
    if arrow:
        out = rhs.replace("...", ell)
        for c in out:
            if c not in "".join(explicit):
                raise RuntimeError(f"einsum(): output subscript {c} does not appear in the equation "
                                   "for any input operand")
            if out.count(c) > 1:
                raise RuntimeError(f"einsum(): output subscript {c} appears more than once in the output")
    else:
        joined = "".join(explicit)
        out = ell + "".join(sorted(c for c in set(joined) if joined.count(c) == 1 and c not in ell))
    return explicit, out


def einsum(equation: str, *operands):
    """Einstein summation over any number of operands, with ``...``, repeated subscripts
    (diagonals), implicit output and size-1 broadcasting; differentiable in every operand.
    One node for the whole contraction (torch records its own decomposition instead)."""
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    arrays = [o._data for o in operands]
    _core.no_complex("einsum", *arrays)
    terms, out_sub = _parse_einsum(equation, arrays)
    _same_dtype(operands)
    sizes: dict[str, int] = {}
    for k, (term, x) in enumerate(zip(terms, arrays)):
        for c, n in zip(term, x.shape):
            seen = sizes.get(c)
            if seen is None or seen == 1:
                sizes[c] = n
            elif n != seen and n != 1:
                raise RuntimeError(f"einsum(): subscript {c} has size {n} for operand {k} which does "
                                   f"not broadcast with previously seen size {seen}")
    # size-1 dims that broadcast against a larger size: drop them (and their letter) per operand
    kept_terms, kept_arrays = [], []
    for term, x in zip(terms, arrays):
        keep = [i for i, (c, n) in enumerate(zip(term, x.shape)) if not (n == 1 and sizes[c] != 1)]
        kept_terms.append("".join(term[i] for i in keep))
        kept_arrays.append(x.reshape([x.shape[i] for i in keep]))
    spec = ",".join(kept_terms) + "->" + out_sub
    out = np.einsum(spec, *kept_arrays, optimize=len(arrays) > 2)

    def backward(g):
        grads = []
        for k, op in enumerate(operands):
            if not op._requires_grad:
                grads.append(None)
                continue
            gk = _einsum_operand_grad(g, out_sub, kept_terms, kept_arrays, k, sizes)
            grads.append(gk.reshape(arrays[k].shape).astype(arrays[k].dtype, copy=False))
        return tuple(grads)

    return result(np.asarray(out), "EinsumBackward0", operands, backward, saved=operands)


def _einsum_operand_grad(g, out_sub, terms, arrays, k, sizes) -> np.ndarray:
    """d(sum(g * einsum(...))) / d(operand k): the contraction of ``g`` with the other operands
    onto operand k's subscripts, broadcast over letters only operand k has, and written onto
    the diagonal where operand k repeats a letter."""
    term = terms[k]
    uniq = "".join(dict.fromkeys(term))
    others = [t for j, t in enumerate(terms) if j != k]
    elsewhere = set(out_sub).union(*others) if others else set(out_sub)
    present = "".join(c for c in uniq if c in elsewhere)
    spec = ",".join([out_sub] + others) + "->" + present
    gp = np.einsum(spec, g, *[a for j, a in enumerate(arrays) if j != k], optimize=len(arrays) > 2)
    shape = [sizes[c] if c in present else 1 for c in uniq]
    gu = np.broadcast_to(gp.reshape(shape), [sizes[c] for c in uniq])
    if len(uniq) == len(term):
        return np.ascontiguousarray(gu)
    full = np.zeros([sizes[c] for c in term], g.dtype)
    key = tuple(np.arange(sizes[c]).reshape([-1 if m == c else 1 for m in uniq]) for c in term)
    full[key] = gu
    return full


# torch's other names for the ops above
ger = outer
