"""Sampling from tensors of probabilities: multinomial (drawn with the engine's generators,
``engine._random``; the streams are the engine's own, not torch's)."""

from __future__ import annotations

import numpy as np

import engine._ops._core as _core

from .. import _random
from .._tensor import Tensor

# The names this module adds to torch's top-level namespace (engine/__init__.py star-imports
# them: this list is the one place they are named).
__all__ = ["multinomial"]


def _check_probs(p: np.ndarray, num_samples: int, replacement: bool) -> None:
    if p.dtype.kind != "f":
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_core._dtype.scalar_type_name(p.dtype)}")
    if p.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > p.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if not np.isfinite(p).all() or (p < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if (p.sum(-1) <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):  # noqa: A002
    """``num_samples`` category indices (int64) per row of non-negative weights (rows need
    not sum to 1). Without replacement every category is drawn at most once, in draw order."""
    p = input._data
    _check_probs(p, num_samples, replacement)
    rows = p.reshape(-1, p.shape[-1]).astype(np.float64)
    n_rows, k = rows.shape
    rng = _random._rng(generator)
    if replacement:  # inverse CDF, every row at once: row r's CDF is shifted into [r, r + 1]
        cdf = np.cumsum(rows, -1)
        cdf /= cdf[:, -1:]
        offsets = np.arange(n_rows)[:, None]
        u = rng.random((n_rows, num_samples))
        idx = np.searchsorted((cdf + offsets).reshape(-1), (u + offsets).reshape(-1), side="right")
        idx = idx.reshape(n_rows, num_samples) - offsets * k
        last = k - 1 - np.argmax(rows[:, ::-1] > 0, axis=-1)  # rounding never picks p == 0
        idx = np.minimum(idx, last[:, None])
    else:  # exponential race: the order of E / p is sequential sampling without replacement;
        # once the non-zero categories run out, zero-probability ones follow (torch does not raise)
        with np.errstate(divide="ignore"):
            keys = rng.standard_exponential((n_rows, k)) / rows
        idx = np.argsort(keys, axis=-1, kind="stable")[:, :num_samples]
    out = idx.astype(np.int64).reshape(p.shape[:-1] + (num_samples,))
    return Tensor._wrap(out)
