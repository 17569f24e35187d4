"""Statistics of torch tensors, computed with torch ops on the tensor's own device.

The torch twin of ``capture.engine.summaries._stats_values``: the same figures, in ``STATS_KEYS``
order. A tensor's statistics stay on its device as a float64 tensor of 8 numbers
(``tensor_stats``) until ``resolve`` moves a whole step's worth to the host in one
``torch.stack`` and one transfer. On CUDA, a ``.item()`` per figure would wait for the GPU once
per figure (8 syncs per tensor, thousands per step); this way the kernels are queued behind the
model's own and the host waits once per step.

Every op is branch-free (no value is read on the host to decide what to compute next), and
most are float arithmetic: on CPU, ops that make a boolean mask (``isfinite``, ``where``) cost
five to ten times a float pass over the same tensor.
"""

from __future__ import annotations

import math

import torch

from ...events.records import STATS_KEYS, StatsValues

_FLOATS = 5  # mean, std, min, max, absmax: NaN on the device stands for None
_WIDE = (torch.float32, torch.float64)  # float dtypes computed as they are; others are cast


def tensor_stats(t: torch.Tensor) -> torch.Tensor:
    """The ``STATS_KEYS`` figures of ``t`` as a float64 tensor of shape (8,) on ``t``'s device.

    mean, std (population), min, max and absmax are taken over the finite values, NaN when there
    are none; ``zeros`` is the fraction of exact zeros among all values; ``nan``/``inf`` count
    NaN and ±Inf. Guaranteed: no autograd graph, ``t`` is neither changed nor bumped in version,
    no host-device synchronisation; any dtype (16-bit floats are computed in float32, int and
    bool in float64, where they are exact), any layout, 0-d and empty tensors. Sums accumulate
    in float64, so the mean of float32 values is float64-close even when they cancel."""
    with torch.no_grad():
        v = _wide(t.detach())
        n = v.numel()
        if n == 0:
            return _empty(v.device)
        bad = v - v  # 0 where finite, NaN at NaN and ±Inf
        nonfinite = torch.count_nonzero(bad)
        count = n - nonfinite  # finite values
        finite = torch.nan_to_num(v, 0.0, 0.0, 0.0)
        mean = finite.sum(dtype=torch.float64) / count  # NaN when count is 0
        # The non-finite values replaced by the mean: in [min, max] and contributing nothing to
        # the spread about the mean. (mean * 0 at the finite values is 0 while the mean is finite.)
        filled = finite.addcmul_(bad.nan_to_num_(nan=1.0), mean)
        lo, hi = torch.aminmax(filled)
        std = torch.linalg.vector_norm(filled.sub_(mean)) / count.sqrt()
        nan = torch.isnan(v).sum()
        zeros = (n - torch.count_nonzero(v)).to(torch.float64) / n
        # float64 throughout: ``mean`` and ``zeros`` are, and ``torch.stack`` promotes the others
        return torch.stack([mean, std, lo, hi, torch.maximum(lo.neg(), hi), zeros, nan, nonfinite - nan])


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when float32/float64; else a float copy: float32 for the 16-bit floats (their
    own precision is too coarse to accumulate in), float64 for int and bool (exact up to 2**53)."""
    if t.dtype in _WIDE:
        return t
    return t.to(torch.float32 if t.is_floating_point() else torch.float64)


def _empty(device: torch.device) -> torch.Tensor:
    """The figures of no values: no statistics, no zeros, no NaN, no Inf."""
    out = torch.zeros(len(STATS_KEYS), dtype=torch.float64, device=device)
    out[:_FLOATS] = math.nan
    return out


def resolve(stats: list[torch.Tensor]) -> list[StatsValues]:
    """``tensor_stats`` results as tuples in ``STATS_KEYS`` order: Python floats, None for NaN or
    ±Inf among mean..absmax, ``zeros`` a float, ``nan``/``inf`` ints. One ``torch.stack`` and
    one device-to-host transfer (``.tolist()``) for the whole list, on whatever device the
    figures are (all on one device: ``torch.stack`` requires it). ``[]`` for ``[]``."""
    if not stats:
        return []
    return [_values(row) for row in torch.stack(stats).tolist()]


def _values(row: list[float]) -> StatsValues:
    head = tuple(x if math.isfinite(x) else None for x in row[:_FLOATS])
    return head + (row[_FLOATS], int(row[_FLOATS + 1]), int(row[_FLOATS + 2]))
