"""Tensor ops torch has that real training code reaches for now and then: set membership
(``isin``), products (``kron``, ``tensordot``, ``baddbmm``/``addbmm``/``addmv``/``addr``,
``trace``), statistics (``diff``, ``cov``, ``corrcoef``, ``quantile``, ``kthvalue``, ``mode``,
``histc``, ``nanmean``), scans (``cummax``, ``cummin``, ``logcumsumexp``), indexed writes
(``index_fill``, ``index_copy``, ``masked_scatter``, ``take``, ``put``, ``index_put`` with
``accumulate``), ``unfold`` (a view), ``renorm``, ``rot90``/``fliplr``/``flipud`` and
constructors (``triu_indices``, ``cartesian_prod``, ``combinations``, ``block_diag``, ``vander``).

Where torch implements an op as a composite of other ops (``diff`` is ``narrow`` and ``sub``,
``tensordot`` is ``permute``/``mm``/``view``, ...) it is composed the same way here, so the
graph and its ``grad_fn`` read as torch's; the rest carry their own NumPy backward.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import engine._ops._core as _core
import engine._ops.indexing as indexing
import engine._ops.pointwise as pointwise
import engine._ops.reduction as reduction
import engine._ops.shape as _shape
import engine._ops.special as special

from ._core import multi_result, result, unbroadcast, wrap_dim
from .linalg import dot, mm

kthvalue_result = namedtuple("kthvalue", ["values", "indices"])
mode_result = namedtuple("mode", ["values", "indices"])
cummax_result = namedtuple("cummax", ["values", "indices"])
cummin_result = namedtuple("cummin", ["values", "indices"])


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


def _arr(x) -> np.ndarray:
    return x._data if isinstance(x, _core.Tensor) else np.asarray(x)


# --- membership, products ----------------------------------------------------------------------

def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """A bool tensor shaped like ``elements``: whether each is in ``test_elements`` (either may
    be a Python scalar)."""
    x, t = _arr(elements), _arr(test_elements)
    return _core.Tensor._wrap(np.isin(x, t, assume_unique=assume_unique, invert=invert))


def kron(a, b):
    """The Kronecker product; both are padded with leading 1-dims to the same rank. Built as
    torch builds it (a broadcast ``mul`` then ``_unsafe_view``)."""
    n = max(a.ndim, b.ndim)
    sa = (1,) * (n - a.ndim) + tuple(a.shape)
    sb = (1,) * (n - b.ndim) + tuple(b.shape)
    ia = sum(((s, 1) for s in sa), ())
    ib = sum(((1, s) for s in sb), ())
    prod = pointwise.mul(_shape.reshape(a, ia), _shape.reshape(b, ib))
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


# --- statistics ----------------------------------------------------------------------------------

def diff(input, n: int = 1, dim: int = -1, prepend=None, append=None):  # noqa: A002
    """The ``n``-th forward difference along ``dim`` (after joining ``prepend``/``append``):
    ``narrow`` and ``sub`` (``logical_xor`` for bool), as torch builds it."""
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    d = wrap_dim(dim, input.ndim)
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _shape.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[d]
        if length == 0:
            break
        hi, lo = _shape.narrow(x, d, 1, length - 1), _shape.narrow(x, d, 0, length - 1)
        x = pointwise.logical_xor(hi, lo) if x._data.dtype == np.bool_ else pointwise.sub(hi, lo)
    return x


def cov(input, *, correction: int = 1, fweights=None, aweights=None):  # noqa: A002
    """The covariance matrix of the variables in the rows of ``input`` (observations in its
    columns), with optional integer frequency and float observation weights."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    obs = input if input.ndim == 2 else _shape.view(input, (1, -1))
    num_obs = obs.shape[1]
    w = fweights
    if aweights is not None:
        w = aweights if w is None else pointwise.mul(w, aweights)
    if w is None:
        w_sum = num_obs
        avg = reduction.mean(obs if obs._data.dtype.kind == "f" else obs.to(_core._dtype._default_float), 1)
        norm_factor = w_sum - correction
    else:
        w_sum = reduction.sum(w)
        avg = pointwise.div(reduction.sum(pointwise.mul(obs, w), 1), w_sum)
        if correction != 0 and aweights is not None:
            norm_factor = pointwise.sub(w_sum, pointwise.div(
                pointwise.mul(reduction.sum(pointwise.mul(w, aweights)), correction), w_sum))
        else:
            norm_factor = pointwise.sub(w_sum, correction)
    if isinstance(norm_factor, _core.Tensor):
        if float(norm_factor.item()) <= 0:
            import warnings
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
                          "number of observations.", stacklevel=2)
            norm_factor = pointwise.mul(norm_factor, 0)
    elif norm_factor <= 0:
        import warnings
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                      "of observations.", stacklevel=2)
        norm_factor = 0
    centred = pointwise.sub(obs, _shape.unsqueeze(avg, 1))
    right = centred if w is None else pointwise.mul(centred, w)
    c = mm(centred, _shape.t(right))
    return _shape.squeeze(pointwise.div(c, norm_factor))


def corrcoef(input):  # noqa: A002
    """Pearson correlation coefficients: ``cov`` normalised by the standard deviations and
    clamped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return pointwise.div(c, c)
    std = pointwise.sqrt(_shape.diagonal(c))
    c = pointwise.div(c, _shape.unsqueeze(std, 1))
    c = pointwise.div(c, _shape.unsqueeze(std, 0))
    return pointwise.clamp(c, -1, 1)


_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(a, q, dim, keepdim, interpolation, ignore_nan):
    x = a._data
    if x.dtype not in (np.float32, np.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, _core.Tensor)
    qa = np.asarray(q, x.dtype) if scalar_q else q._data
    if not scalar_q:
        if qa.ndim > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if qa.dtype != x.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        scalar_q = qa.ndim == 0
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if scalar_q and not 0 <= float(qa) <= 1:
        raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {float(qa)}")
    if not scalar_q and ((qa < 0) | (qa > 1)).any():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if dim is None:
        src, d = _shape.reshape(a, (-1,)), 0
    else:
        d = wrap_dim(dim, a.ndim)
        src = a if a.ndim else _shape.reshape(a, (1,))
        d = d if a.ndim else 0
    moved = _last(src, d)
    srt = _core.Tensor.sort(moved, -1).values
    s = srt._data
    n = s.shape[-1]
    qs = qa.reshape(-1).astype(np.float64)
    nan = np.isnan(s)
    if ignore_nan:
        valid = (~nan).sum(-1, keepdims=True)
        ranks = qs * (valid - 1)
        empty = valid == 0
        ranks = np.where(empty, n - 1, ranks)
    else:
        ranks = np.where(nan.any(-1, keepdims=True), n - 1, qs * (n - 1) + np.zeros(s.shape[:-1] + (1,)))
    if interpolation == "lower":
        ranks = np.floor(ranks)
    elif interpolation == "higher":
        ranks = np.ceil(ranks)
    elif interpolation == "nearest":
        ranks = np.round(ranks)
    lo = np.clip(np.floor(ranks), 0, max(n - 1, 0)).astype(np.int64)
    hi = np.clip(np.ceil(ranks), 0, max(n - 1, 0)).astype(np.int64)
    v_lo = indexing.gather(srt, -1, _core.Tensor._wrap(lo))
    if interpolation == "linear" or interpolation == "midpoint":
        w = 0.5 if interpolation == "midpoint" else (ranks - lo).astype(x.dtype)
        v_hi = indexing.gather(srt, -1, _core.Tensor._wrap(hi))
        out = special.lerp(v_lo, v_hi, w if isinstance(w, float) else _core.Tensor._wrap(w))
    else:
        out = v_lo
    if ignore_nan and empty.any():
        out = pointwise.masked_fill(out, _core.Tensor._wrap(np.broadcast_to(empty, out.shape)), float("nan"))
    # out is (..., Q): Q goes first, then the reduced dim is dropped or kept as size 1
    out = _shape.permute(out, (out.ndim - 1, *range(out.ndim - 1)))
    if keepdim:
        kept = [1] * a.ndim if dim is None else list(a.shape)
        if dim is not None and a.ndim:
            kept[d] = 1
        out = _shape.reshape(out, (len(qs), *kept))
    return _shape.squeeze(out, 0) if scalar_q else out


def _last(t, d):
    if d == t.ndim - 1:
        return t
    order = [i for i in range(t.ndim) if i != d] + [d]
    return _shape.permute(t, order)


def quantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):  # noqa: A002
    """The ``q``-th quantiles (a float or a 1-D tensor, q's dim first in the result) along
    ``dim`` (over everything by default); a slice with a NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, False)


def nanquantile(input, q, dim=None, keepdim: bool = False, *, interpolation: str = "linear"):  # noqa: A002
    """``quantile`` ignoring NaNs (an all-NaN slice gives NaN)."""
    return _quantile(input, q, dim, keepdim, interpolation, True)


def _select_along(a, dim, keepdim, pick, name, result_type):
    """``(values, indices)`` for a per-slice pick: ``pick(x_moved_last) -> idx (..., )``."""
    x = a._data
    if x.ndim == 0:
        idx = np.zeros((), np.int64)
        v, i = multi_result([x.copy(), idx], name, (a,), lambda g, *_: (np.array(g, copy=True),),
                            differentiable=(True, False))
        return result_type(v, i)
    d = wrap_dim(dim, x.ndim)
    idx = np.expand_dims(pick(np.moveaxis(x, d, -1)), d).astype(np.int64)
    values = np.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values, idx_out = np.squeeze(values, d), np.squeeze(idx, d)
    else:
        idx_out = idx
    v, i = multi_result([values, idx_out], name, (a,),
                        reduction._select_backward(x.shape, idx_out, d, keepdim), differentiable=(True, False))
    return result_type(v, i)


def kthvalue(input, k: int, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The ``k``-th smallest value (1-based) along ``dim`` and its index."""
    x = input._data
    d = wrap_dim(dim, x.ndim)
    n = x.shape[d] if x.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {d}")
    return _select_along(input, dim, keepdim,
                         lambda m: np.argsort(m, axis=-1, kind="stable")[..., k - 1], "KthvalueBackward0",
                         kthvalue_result)


def mode(input, dim: int = -1, keepdim: bool = False):  # noqa: A002
    """The most frequent value along ``dim`` (the smallest among equally frequent ones) and the
    index of its last occurrence, as torch's CPU kernel gives."""
    def pick(m):
        n = m.shape[-1]
        s = np.sort(m, axis=-1)
        pos = np.arange(n)
        new_run = np.ones(s.shape, bool)
        new_run[..., 1:] = s[..., 1:] != s[..., :-1]
        start = np.maximum.accumulate(np.where(new_run, pos, 0), axis=-1)
        count = pos - start + 1  # length of the run so far: its full length at the run's end
        best = np.take_along_axis(s, np.argmax(count, axis=-1)[..., None], -1)
        hits = m == best
        return n - 1 - np.argmax(hits[..., ::-1], axis=-1)  # the last occurrence

    return _select_along(input, dim, keepdim, pick, "ModeBackward0", mode_result)


def histc(input, bins: int = 100, min=0, max=0):  # noqa: A002
    """Counts in ``bins`` equal-width bins over ``[min, max]`` (the data's range when both are
    0, widened by 1 each way if that range is empty); values outside are ignored. Not
    differentiable, as in torch."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"histogram_cpu\" not implemented for '{_type_name(x.dtype)}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    counts, _ = np.histogram(x[~np.isnan(x)], bins=bins, range=(lo, hi))
    return _core.Tensor._wrap(counts.astype(x.dtype))


def nanmean(input, dim=None, keepdim: bool = False, *, dtype=None):  # noqa: A002
    """The mean of the non-NaN elements: ``nansum / count``, as torch composes it."""
    x = input._data
    if x.dtype.kind != "f":
        raise RuntimeError(f"nanmean(): expected input to have floating point or complex dtype but got "
                           f"{_type_name(x.dtype)}")
    count = reduction.sum(_core.Tensor._wrap(~np.isnan(x)), dim, keepdim)
    return pointwise.div(reduction.nansum(input, dim, keepdim, dtype), count)


# --- scans ---------------------------------------------------------------------------------------

def _cum_extreme(a, dim, ufunc, name, result_type):
    x = a._data
    if x.ndim == 0:
        v, i = multi_result([x.copy(), np.zeros((), np.int64)], name, (a,),
                            lambda g, *_: (np.array(g, copy=True),), differentiable=(True, False))
        return result_type(v, i)
    d = wrap_dim(dim, x.ndim)
    values = ufunc.accumulate(x, axis=d) if x.dtype != np.bool_ else ufunc.accumulate(x, axis=d).astype(bool)
    pos = np.arange(x.shape[d]).reshape((-1,) + (1,) * (x.ndim - 1 - d))
    # the index moves to every element that is >= (<=) the running extreme, or NaN
    hit = x == values
    if x.dtype.kind == "f":
        hit |= np.isnan(x)
    idx = np.maximum.accumulate(np.where(hit, pos, 0), axis=d).astype(np.int64)
    shape = x.shape

    def backward(g, *_):
        gx = np.zeros(shape, g.dtype)
        key = list(np.indices(shape, sparse=True))
        key[d] = idx
        np.add.at(gx, tuple(key), g)
        return (gx,)

    v, i = multi_result([values, idx], name, (a,), backward, differentiable=(True, False))
    return result_type(v, i)


def cummax(input, dim: int):  # noqa: A002
    """Running maximum along ``dim`` and where it was taken (the latest of equal values)."""
    return _cum_extreme(input, dim, np.maximum, "CummaxBackward0", cummax_result)


def cummin(input, dim: int):  # noqa: A002
    """Running minimum along ``dim`` and where it was taken (the latest of equal values)."""
    return _cum_extreme(input, dim, np.minimum, "CumminBackward0", cummin_result)


def logcumsumexp(input, dim: int):  # noqa: A002
    """``log(cumsum(exp(x)))`` along ``dim``, computed stably (``logaddexp.accumulate``)."""
    x = input._data
    if x.dtype.kind != "f":
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{_type_name(x.dtype)}'")
    if x.ndim == 0:
        return result(x.copy(), "LogcumsumexpBackward0", (input,), lambda g: (g,))
    d = wrap_dim(dim, x.ndim)
    out = np.logaddexp.accumulate(x, axis=d)

    def backward(g):
        # grad_j = sum_{i >= j} g_i exp(x_j - out_i), summed in log space for the positive and
        # the negative g_i apart (as torch does), so no exp over- or underflows
        with np.errstate(divide="ignore"):
            log_g = np.log(np.abs(g))

        def part(sign):
            terms = np.where(np.sign(g) == sign, log_g - out, -np.inf)
            acc = np.flip(np.logaddexp.accumulate(np.flip(terms, d), axis=d), d)
            return np.exp(x + acc)

        return ((part(1) - part(-1)).astype(x.dtype),)

    return result(out, "LogcumsumexpBackward0", (input,), backward, saved=(input,))


def renorm(input, p, dim: int, maxnorm):  # noqa: A002
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` is scaled down to norm
    ``maxnorm`` (by ``maxnorm / (norm + 1e-7)``)."""
    x = input._data
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm:g}")
    d = wrap_dim(dim, x.ndim)
    axes = tuple(i for i in range(x.ndim) if i != d)
    ax = np.abs(x)
    if p == float("inf"):
        norm = ax.max(axis=axes, keepdims=True) if axes else ax
    else:
        norm = (ax ** p).sum(axis=axes, keepdims=True) ** (1.0 / p) if axes else ax
    over = norm > maxnorm
    factor = np.where(over, maxnorm / (norm + 1e-7), 1.0).astype(x.dtype)

    def backward(g):
        # factor depends on the norm where it bites: d factor / d norm = -maxnorm / (norm+eps)^2
        gx = g * factor
        dot = (g * x).sum(axis=axes, keepdims=True) if axes else g * x
        dfac = np.where(over, -maxnorm / (norm + 1e-7) ** 2, 0.0)
        safe = np.where(norm > 0, norm, 1.0)
        if p == float("inf"):
            at = (ax == norm)
            dnorm = np.sign(x) * at / np.maximum(at.sum(axis=axes, keepdims=True) if axes else at, 1)
        else:
            dnorm = np.sign(x) * ax ** (p - 1) / safe ** (p - 1)
        return ((gx + dot * dfac * dnorm).astype(x.dtype),)

    return result(x * factor, "RenormBackward0", (input,), backward, saved=(input,))


# --- indexed reads and writes --------------------------------------------------------------------

def _index_vector(index, name: str) -> np.ndarray:
    idx = _arr(index)
    if idx.dtype != np.int64:
        raise IndexError(f"{name}(): Expected dtype int64 for index.")
    return idx.reshape(-1)


def index_fill(input, dim: int, index, value):  # noqa: A002
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value`` (a number
    or a 0-dim tensor, which gets the gradient of the filled slots)."""
    x = input._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_vector(index, "index_fill_")
    n = x.shape[d] if x.ndim else 1
    _bounds(idx, d, n)
    key = (slice(None),) * d + (idx,)
    tv = value if isinstance(value, _core.Tensor) else None
    if tv is not None and tv.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with {tv.ndim} "
                           "dimension(s).")
    out = x.copy()
    out[key] = tv._data if tv is not None else value

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        gv = None if tv is None else np.asarray(g[key].sum(), g.dtype)
        return gx, gv

    # torch's two overloads: a Scalar value (IndexFillBackward0) or a 0-dim Tensor (IndexFillBackward1)
    return result(out, "IndexFillBackward1" if tv is not None else "IndexFillBackward0", (input, tv), backward)


def _bounds(idx, d, n):
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"index {int(idx[np.argmax(bad)])} is out of bounds for dimension {d} with size {n}")


def index_copy(input, dim: int, index, source):  # noqa: A002
    """A copy of ``input`` whose slices ``index`` along ``dim`` are ``source``'s slices."""
    x, s = input._data, source._data
    d = wrap_dim(dim, x.ndim)
    idx = _index_vector(index, "index_copy_")
    n_src = s.shape[d] if s.ndim else 1
    if idx.size != n_src:
        raise IndexError(f"index_copy_(): Number of indices ({idx.size}) should be equal to source.size(dim) "
                         f"({n_src})")
    for i in range(x.ndim):
        if i != d and s.ndim == x.ndim and s.shape[i] != x.shape[i]:
            raise RuntimeError(f"index_copy_(): Source/destination tensor must have same slice shapes. "
                               f"Destination slice shape: {x.shape[i]} at dimension {d} and source slice "
                               f"shape: {s.shape[i]} at dimension {d}.")
    if s.dtype != x.dtype:
        raise RuntimeError(f"index_copy_(): self and source expected to have the same dtype, but got (self) "
                           f"{_type_name(x.dtype)} and (source) {_type_name(s.dtype)}")
    _bounds(idx, d, x.shape[d] if x.ndim else 1)
    key = (slice(None),) * d + (idx,)
    out = x.copy()
    out[key] = s
    src_shape = s.shape

    def backward(g):
        gx = g.copy()
        gx[key] = 0
        return gx, g[key].reshape(src_shape)

    return result(out, "IndexCopyBackward0", (input, source), backward)


def masked_scatter(input, mask, source):  # noqa: A002
    """A copy of ``input`` where the ``True`` slots of ``mask`` (broadcast to it) take
    ``source``'s elements in row-major order."""
    x, m, s = input._data, _arr(mask), source._data
    if m.dtype != np.bool_:
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype "
                           f"{_type_name(m.dtype)}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but got"
                           f"{_type_name(x.dtype)} and {_type_name(s.dtype)}")
    shape = np.broadcast_shapes(x.shape, m.shape)
    m = np.broadcast_to(m, shape)
    k = int(m.sum())
    if k > s.size:
        raise RuntimeError("Number of elements of source < number of ones in mask")
    out = np.broadcast_to(x, shape).copy()
    out[m] = s.reshape(-1)[:k]
    in_shape, src_shape = x.shape, s.shape

    def backward(g):
        gs = np.zeros(int(np.prod(src_shape)), g.dtype)
        gs[:k] = g[m]
        return unbroadcast(np.where(m, 0, g), in_shape), gs.reshape(src_shape)

    return result(out, "MaskedScatterBackward0", (input, source), backward)


def _flat_index(idx: np.ndarray, n: int) -> np.ndarray:
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"out of range: tried to access index {int(idx.reshape(-1)[np.argmax(bad.reshape(-1))])} "
                         f"on a tensor of {n} elements.")
    return np.where(idx < 0, idx + n, idx)


def take(input, index):  # noqa: A002
    """Elements of the flattened ``input`` at ``index`` (negative counts from the end), shaped
    like ``index``."""
    x, i = input._data, _arr(index)
    if i.dtype != np.int64:
        raise RuntimeError(f"take(): Expected a long tensor for index, but got {_type_name(i.dtype)}")
    flat = _flat_index(i, x.size)
    shape = x.shape

    def backward(g):
        gx = np.zeros(x.size, g.dtype)
        np.add.at(gx, flat.reshape(-1), g.reshape(-1))
        return (gx.reshape(shape),)

    return result(x.reshape(-1)[flat], "TakeBackward0", (input,), backward,
                  tensor_backward=_core.linear_backward("TakeBackward0", backward,
                                                        lambda arr: arr.reshape(-1)[flat]))


def put(input, index, source, accumulate: bool = False):  # noqa: A002
    """A copy of ``input`` with ``source`` written (or added) at the flat positions ``index``."""
    x, i, s = input._data, _arr(index), source._data
    if i.dtype != np.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_type_name(i.dtype)}")
    if i.size != s.size:
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {s.size}, index.numel() = {i.size}")
    if s.dtype != x.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_type_name(x.dtype)} and source.dtype = {_type_name(s.dtype)}")
    flat = _flat_index(i, x.size).reshape(-1)
    out = x.copy().reshape(-1)
    if accumulate:
        np.add.at(out, flat, s.reshape(-1))
    else:
        out[flat] = s.reshape(-1)
    shape, src_shape = x.shape, s.shape

    def backward(g):
        gf = g.reshape(-1)
        gs = gf[flat].reshape(src_shape)
        if accumulate:
            return g, gs
        gx = gf.copy()
        gx[flat] = 0
        return gx.reshape(shape), gs

    return result(out.reshape(shape), "PutBackward0", (input, source), backward)


def index_put(input, indices, values, accumulate: bool = False):  # noqa: A002
    """``input[indices] = values`` out of place (``+=`` with repeats summed when
    ``accumulate``); ``indices`` is a tuple of index tensors, one per leading dim."""
    if isinstance(indices, _core.Tensor):
        raise TypeError("index_put(): argument 'indices' (position 1) must be tuple of Tensors, not Tensor")
    key = tuple(indices)
    if isinstance(values, _core.Tensor) and values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{_type_name(input._data.dtype)} for the destination and "
                           f"{_type_name(values._data.dtype)} for the source.")
    if not accumulate:
        return indexing.index_put(input, key, values)
    x = input._data
    k = tuple(_arr(t) for t in key)
    k = tuple(part for t in k for part in (np.nonzero(t) if t.dtype == np.bool_ else (t,)))
    v = values._data
    out = x.copy()
    try:
        np.add.at(out, k, v)
    except IndexError as e:
        raise IndexError(str(e).replace("axis", "dimension")) from None
    v_shape = v.shape

    def backward(g):
        gk = g[k]
        return g, unbroadcast(np.broadcast_to(gk, np.broadcast_shapes(gk.shape, v_shape)), v_shape)

    return result(out, "IndexPutBackward0", (input, values), backward)


# --- views and layout ----------------------------------------------------------------------------

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


# --- constructors --------------------------------------------------------------------------------

def _indices(fn, row, col, offset, dtype):
    npdt = np.int64 if dtype is None else _core._dtype.to_numpy_dtype(dtype)
    r, c = fn(row, offset, col)
    return _core.Tensor._wrap(np.stack([r, c]).astype(npdt).reshape(2, -1))


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) row/column indices of the upper triangle of a ``row x col`` matrix."""
    return _indices(np.triu_indices, row, col, offset, dtype)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None, layout=None):
    """The (2, N) row/column indices of the lower triangle of a ``row x col`` matrix."""
    return _indices(np.tril_indices, row, col, offset, dtype)


def _vector_check(t):
    if t.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")


def cartesian_prod(*tensors):
    """Every combination of one element from each 1-D tensor, as rows (``meshgrid`` then
    ``stack``, as torch does); a single tensor comes back as it is."""
    for t in tensors:
        _vector_check(t)
    if len(tensors) == 1:
        return tensors[0]
    grids = _shape.meshgrid(*tensors, indexing="ij")
    return _shape.stack([_shape.flatten(g) for g in grids], 1)


def combinations(input, r: int = 2, with_replacement: bool = False):  # noqa: A002
    """All length-``r`` combinations of the elements of a 1-D tensor, as rows."""
    _vector_check(input)
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _core.Tensor._wrap(np.zeros((0,), input._data.dtype))
    n = input.shape[0]
    grid = np.indices((n,) * r).reshape(r, -1)
    steps = np.diff(grid, axis=0)
    keep = ((steps >= 0) if with_replacement else (steps > 0)).all(axis=0)
    picks = grid[:, keep]
    return _shape.stack([indexing.index_select(input, 0, _core.Tensor._wrap(p.astype(np.int64)))
                         for p in picks], 1)


def block_diag(*tensors):
    """A block-diagonal matrix of the inputs (0-d as 1x1, 1-d as one row)."""
    mats = []
    for i, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.ndim} dimensions")
        mats.append(t._data.reshape((1, 1) if t.ndim == 0 else (1, -1) if t.ndim == 1 else t.shape))
    dt = _core._dtype.result_type_many(*[t._data for t in tensors]) if len(tensors) > 1 else (
        tensors[0]._data.dtype if tensors else _core.default_float())
    rows, cols = sum(m.shape[0] for m in mats), sum(m.shape[1] for m in mats)
    out = np.zeros((rows, cols), dt)
    spans, r, c = [], 0, 0
    for m in mats:  # one block per input tensor
        out[r:r + m.shape[0], c:c + m.shape[1]] = m
        spans.append((r, c, m.shape))
        r, c = r + m.shape[0], c + m.shape[1]
    shapes = [t._data.shape for t in tensors]
    dtypes = [t._data.dtype for t in tensors]

    def backward(g):
        return tuple(g[r:r + s[0], c:c + s[1]].reshape(shape).astype(dt_in, copy=False)
                     if dt_in.kind == "f" else None
                     for (r, c, s), shape, dt_in in zip(spans, shapes, dtypes))

    return result(out, "BlockDiagBackward0", tensors, backward)


def vander(x, N=None, increasing: bool = False):  # noqa: N803 - torch's name
    """The Vandermonde matrix: columns are powers of ``x`` (decreasing unless ``increasing``);
    a ``cumprod`` of ``[1, x, x, ...]`` then a ``flip``, as torch builds it."""
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    src = x if x._data.dtype.kind in "fc" else x.to(_core._dtype._by_name("int64"))
    ones = _core.Tensor._wrap(np.ones((x.shape[0], 1), src._data.dtype))
    if n == 0:
        out = _core.Tensor._wrap(np.zeros((x.shape[0], 0), src._data.dtype))
    elif n == 1:
        out = ones
    else:
        rest = _shape.expand(_shape.unsqueeze(src, 1), x.shape[0], n - 1)
        out = reduction.cumprod(_shape.cat([ones, rest], 1), 1)
    return out if increasing else _shape.flip(out, 1)


# --- more small ops torch code reaches for ------------------------------------------------------

def ravel(input):  # noqa: A002
    """The flattened tensor (a view when possible): ``reshape(-1)``."""
    return _shape.reshape(input, (-1,))


def argwhere(input):  # noqa: A002
    """The (N, ndim) indices of the non-zero elements: ``nonzero``."""
    return indexing.nonzero(input)


def swapdims(input, dim0: int, dim1: int):  # noqa: A002
    return _shape.transpose(input, dim0, dim1)


def msort(input):  # noqa: A002
    """Sorted along dim 0 (the values of ``sort(input, 0)``)."""
    return _core.Tensor.sort(input, 0).values


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


def dist(input, other, p=2):  # noqa: A002
    """The ``p``-norm of ``input - other`` (broadcast)."""
    x, y = input._data, other._data
    dt = _core._dtype.result_type(x, y)
    d = (x - y).astype(dt, copy=False)
    a = np.abs(d)
    p = float(p)
    if p == 0:
        out = np.asarray((a != 0).sum(), dt)
    elif np.isinf(p):
        out = np.asarray(a.max() if p > 0 else a.min(), dt) if a.size else np.zeros((), dt)
    else:
        out = np.asarray((a ** p).sum() ** (1.0 / p), dt)

    def backward(g):
        if p == 0 or out == 0:
            gd = np.zeros_like(d)
        elif np.isinf(p):
            hit = a == out
            gd = np.sign(d) * hit / hit.sum()
        else:
            gd = np.sign(d) * a ** (p - 1) / out ** (p - 1)
        gd = (g * gd).astype(dt, copy=False)
        return unbroadcast(gd, x.shape), unbroadcast(-gd, y.shape)

    return result(out, "DistBackward0", (input, other), backward, saved=(input, other))


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):  # noqa: A002
    """Matrices whose diagonal (``offset``) in dims ``dim1``/``dim2`` of the result is the last
    dim of ``input``."""
    x = input._data
    nd = x.ndim + 1
    d1, d2 = wrap_dim(dim1, nd), wrap_dim(dim2, nd)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    n = x.shape[-1] + abs(offset)
    square = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    _shape._diagonal_view(square, offset, nd - 2, nd - 1)[...] = x
    out = np.moveaxis(square, (-2, -1), (d1, d2))

    def backward(g):
        return (np.diagonal(g, offset, d1, d2).copy(),)

    return result(out.copy(), "DiagEmbedBackward0", (input,), backward)


def diagflat(input, offset: int = 0):  # noqa: A002
    """A matrix with the flattened ``input`` on diagonal ``offset``."""
    return _shape.diag(_shape.reshape(input, (-1,)), offset)


def isposinf(input):  # noqa: A002
    return _core.Tensor._wrap(np.isposinf(input._data))


def isneginf(input):  # noqa: A002
    return _core.Tensor._wrap(np.isneginf(input._data))


def _nan_extremum(name: str, pick, better):
    def op(input, other):  # noqa: A002
        x, y, dt = input._data, other._data, None
        dt = _core._dtype.result_type(x, y)
        out = pick(x.astype(dt, copy=False), y.astype(dt, copy=False))

        def backward(g):
            # torch: the gradient goes to ``input`` where it wins (ties included) or other is NaN
            take_x = better(x, y) | np.isnan(y)
            return (unbroadcast(np.where(take_x, g, 0), x.shape), unbroadcast(np.where(take_x, 0, g), y.shape))

        return result(out, name, (input, other), backward, saved=(input, other))

    op.__name__ = name.removesuffix("Backward0").lower()
    return op


fmax = _nan_extremum("FmaxBackward0", np.fmax, np.greater_equal)
fmin = _nan_extremum("FminBackward0", np.fmin, np.less_equal)


def logaddexp2(input, other):  # noqa: A002
    """``log2(2**input + 2**other)`` computed stably."""
    x, y = input._data, other._data
    out = np.logaddexp2(x, y)

    def backward(g):
        return (unbroadcast(g / (1 + np.exp2(y - x)), x.shape), unbroadcast(g / (1 + np.exp2(x - y)), y.shape))

    return result(out, "Logaddexp2Backward0", (input, other), backward, saved=(input, other))


def float_power(input, exponent):  # noqa: A002
    """``pow`` in double precision (the result is float64, whatever the inputs)."""
    f64 = _core._dtype._by_name("float64")
    base = input.to(f64) if isinstance(input, _core.Tensor) else input
    exp = exponent.to(f64) if isinstance(exponent, _core.Tensor) else float(exponent)
    if not isinstance(base, _core.Tensor):
        return pointwise.rpow(exp, float(base))
    return pointwise.pow(base, exp)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoidal rule along ``dim``: spacing ``dx`` (default 1) or sample points ``x``."""
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    if n == 0:
        return reduction.sum(y, d)
    pair = pointwise.add(_shape.narrow(y, d, 1, n - 1), _shape.narrow(y, d, 0, n - 1))
    if x is None:
        return pointwise.mul(reduction.sum(pair, d), (1.0 if dx is None else dx) / 2.0)
    steps = diff(x, dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1:
        steps = _shape.reshape(steps, (-1,) + (1,) * (y.ndim - 1 - d))
    return pointwise.div(reduction.sum(pointwise.mul(steps, pair), d), 2.0)


trapz = trapezoid


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running trapezoidal integral along ``dim`` (one element shorter than ``y``)."""
    d = wrap_dim(dim, y.ndim)
    n = y.shape[d]
    pair = pointwise.add(_shape.narrow(y, d, 1, n - 1), _shape.narrow(y, d, 0, n - 1))
    if x is None:
        return reduction.cumsum(pointwise.mul(pair, (1.0 if dx is None else dx) / 2.0), d)
    steps = diff(x, dim=-1 if x.ndim == 1 else d)
    if x.ndim == 1:
        steps = _shape.reshape(steps, (-1,) + (1,) * (y.ndim - 1 - d))
    return reduction.cumsum(pointwise.div(pointwise.mul(steps, pair), 2.0), d)
