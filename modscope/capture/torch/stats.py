"""Statistics of torch tensors, computed with torch ops on the tensor's own device.

The torch twin of the NumPy ``capture.arrays.stats_values``: the same figures, in ``STATS_KEYS``
order. A tensor's statistics stay on its device as a float64 tensor of 8 numbers
(``tensor_stats``) until ``resolve`` moves a whole step's worth to the host in one
``torch.stack`` and one transfer. On CUDA, a ``.item()`` per figure would wait for the GPU once
per figure (8 syncs per tensor, thousands per step); this way the kernels are queued behind the
model's own and the host waits once per step.

Every op is branch-free: no value is read on the host to decide what to compute next. (On
CPU, NumPy over ``t.numpy()`` is several times faster: torch allocates fresh temporaries per op
there, where CUDA's caching allocator reuses them.)
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
    no host-device synchronisation, any dtype (16-bit floats are computed in float32, int and
    bool in float64, where they are exact; complex: the real part, as NumPy's cast), any
    layout (a sparse tensor is made dense), 0-d and empty tensors.

    Accuracy without a float64 copy: the finite values are scaled by a power of two to absmax in
    [0.5, 1) (exact, and no sum or square can overflow, however large the values); min, max
    and absmax are exact; the spread is the corrected two-pass one (deviations from the mean and
    their squares summed), so a large mean does not swamp it. The mean is one sum in the compute
    dtype, so float32-close for float32 values (measured on a million: within 6e-8 relative,
    and within 1e-8 of the values' own scale when they cancel, on CPU where torch's sums are
    pairwise; CUDA's tree sums are float32-close to that scale too, as the NumPy summaries).
    Temporaries: two copies of the values in the compute dtype and a boolean mask; 16 passes
    over the data in ~43 small ops (kernel launches on CUDA)."""
    with torch.no_grad():
        v = _wide(t.detach())
        n = v.numel()
        if n == 0:
            return _empty(v.device)
        bad = v - v  # 0 where finite, NaN at NaN and ±Inf
        nonfinite = torch.count_nonzero(bad)
        count = n - nonfinite  # of finite values
        x = torch.nan_to_num(v, 0.0, 0.0, 0.0)
        scale = _power_of_two_scale(x)
        x.mul_(scale)
        mean0 = x.sum() / count  # NaN when no value is finite: every figure below is then NaN
        # The non-finite values replaced by that mean: within [min, max], and deviations of 0.
        x.addcmul_(bad.nan_to_num_(nan=1.0), mean0)
        lo, hi = torch.aminmax(x)
        x.sub_(mean0)
        deviation = x.sum()
        spread = x.square_().sum()
        # float64 from here: counts exact, no overflow; back to the values' own scale at the end
        mean0, deviation, spread, lo, hi = torch.stack([mean0, deviation, spread, lo, hi]).double().unbind()
        m1 = deviation / count  # the mean of the deviations from mean0: 0 but for rounding
        std = (spread / count - m1 * m1).clamp_min(0.0).sqrt()  # the corrected two-pass spread
        head = torch.stack([mean0, std, lo, hi]) / scale
        nan = torch.count_nonzero(torch.isnan(v))
        zeros = (n - torch.count_nonzero(v)).double() / n
        return torch.cat([head, torch.stack([head[2:].abs().amax(), zeros, nan, nonfinite - nan])])


def _power_of_two_scale(finite: torch.Tensor) -> torch.Tensor:
    """A 0-d float64 power of two that brings the largest absolute value of ``finite`` into
    [0.5, 1); 1 when every value is 0. Scaling by it is exact (short of subnormals)."""
    absmax = torch.linalg.vector_norm(finite, ord=math.inf)
    return torch.pow(0.5, torch.frexp(absmax).exponent.double())


def _wide(t: torch.Tensor) -> torch.Tensor:
    """``t`` itself when float32/float64; else a float copy: float32 for the 16-bit floats (their
    own precision is too coarse to accumulate in), float64 for int and bool (exact up to 2**53).
    A sparse tensor is made dense first; of a complex one the real part is taken."""
    if t.layout != torch.strided:
        t = t.to_dense()
    if t.is_complex():
        t = t.real
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
    one device-to-host transfer (``.tolist()``) for the whole list. (Figures on several devices
    are first copied to the first one's.) ``[]`` for ``[]``."""
    if not stats:
        return []
    device = stats[0].device
    if any(s.device != device for s in stats):
        stats = [s.to(device) for s in stats]
    return [_values(row) for row in torch.stack(stats).tolist()]


def _values(row: list[float]) -> StatsValues:
    head = tuple(x if math.isfinite(x) else None for x in row[:_FLOATS])
    return head + (row[_FLOATS], int(row[_FLOATS + 1]), int(row[_FLOATS + 2]))
