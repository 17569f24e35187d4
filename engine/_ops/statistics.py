"""Statistics over a tensor: ``cov``, ``corrcoef``, ``quantile``/``nanquantile``,
``kthvalue``, ``mode``, ``histc``, ``nanmean`` and ``nanmedian``.

``cov``/``corrcoef``/``quantile`` are composed of other ops as torch composes them (their graphs
read as torch's); ``kthvalue``/``mode``/``nanmedian`` return torch's ``(values, indices)`` tuples.
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

from ._core import multi_result, result, wrap_dim
from .linalg import mm
from .reduction import _empty_dim_error, _evenly, _select_backward, median

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["corrcoef", "cov", "histc", "kthvalue", "nanmean", "nanmedian", "nanquantile", "quantile"]


def _type_name(dt) -> str:
    return _core._dtype.scalar_type_name(np.dtype(dt))


kthvalue_result = namedtuple("kthvalue", ["values", "indices"])


mode_result = namedtuple("mode", ["values", "indices"])


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


nanmedian_result = namedtuple("nanmedian", ["values", "indices"])


def nanmedian(input, dim: int | None = None, keepdim: bool = False):  # noqa: A002
    """The lower median of the non-NaN values (NaN only where all are NaN), or
    ``(values, indices)`` along ``dim``. An all-NaN row's index is its first NaN (torch's
    index there is unspecified)."""
    x = input._data
    if x.dtype.kind == "b":
        raise NotImplementedError("\"median_cpu\" not implemented for 'Bool'")
    if x.dtype.kind != "f":
        return median(input, dim, keepdim) if dim is not None else median(input)
    if dim is None:
        flat = x.reshape(-1)
        ok = flat[~np.isnan(flat)]
        out = np.asarray(np.nan, x.dtype) if ok.size == 0 else np.asarray(np.partition(ok, (ok.size - 1) // 2)[
            (ok.size - 1) // 2])
        return result(out, "NanmedianBackward0", (input,), _evenly(x, out), saved=(input,), save_output=True)
    d = wrap_dim(dim, x.ndim)
    if x.shape[d] == 0:
        raise _empty_dim_error("median", d)
    order = np.argsort(x, axis=d, kind="stable")  # NaNs sort last, in their original order
    valid = (~np.isnan(x)).sum(axis=d, keepdims=True)
    pos = np.where(valid > 0, (valid - 1) // 2, valid)  # all NaN: the first NaN
    idx = np.take_along_axis(order, pos, axis=d).astype(np.int64, copy=False)
    values = np.take_along_axis(x, idx, axis=d)
    if not keepdim:
        values, idx = values.squeeze(d), idx.squeeze(d)
    v, i = multi_result([values, idx], "NanmedianBackward1", (input,),
                        _select_backward(x.shape, idx, d, keepdim), differentiable=(True, False))
    return nanmedian_result(v, i)
