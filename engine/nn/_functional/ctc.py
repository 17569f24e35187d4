"""``ctc_loss``: the connectionist temporal classification loss, as torch.nn.functional.ctc_loss.

The per-sequence negative log likelihood is one node, ``CtcLossBackward0``, computed by the
log-space alpha recursion over the extended target (blanks between and around the labels),
vectorised over the batch with NumPy (one loop over time steps). Its backward is torch's: the
alpha-beta occupancies ``γ(t, c)`` give ``grad = exp(log_probs) - γ`` per time step inside each
sequence's input length, zero after it. (That is the gradient for log_probs that come out of a
``log_softmax``, as torch's kernel assumes: it is exact once the log_softmax backward has run.)
Reductions are composed as ATen composes them: ``where`` for ``zero_infinity``, then
``(nll / clamp_min(target_lengths, 1)).mean()`` or ``.sum()``, so the graph ends in torch's nodes.

Deviation from torch, on purpose: a target label outside ``[0, C)`` raises an error naming it
(torch's CPU kernel reads out of bounds and returns an arbitrary number).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import engine._ops.pointwise as pointwise
import engine._ops.reduction as red
import engine._ops.shape as shape

from ..._ops._core import result
from ..._tensor import Tensor
from ._utils import check_reduction, legacy_type_name

_CHECKING = " (while checking arguments for ctc_loss_allocate_outputs)"


def _lengths(value: Any, name: str) -> np.ndarray:
    """``input_lengths``/``target_lengths`` as an int64 array: an integral Tensor (any shape) or a
    sequence of ints, as torch's two overloads take them."""
    if isinstance(value, Tensor):
        if value._data.dtype.kind not in "iu":
            raise RuntimeError(f"{name} must be integral")
        return value._data.reshape(-1).astype(np.int64)
    if isinstance(value, list | tuple) and all(isinstance(v, int | np.integer) for v in value):
        return np.asarray(value, dtype=np.int64).reshape(-1)
    raise TypeError(f"ctc_loss(): {name} must be a Tensor or a tuple of ints, not {type(value).__name__}")


def _padded_targets(targets: np.ndarray, tg_lens: np.ndarray, batch: int) -> np.ndarray:
    """Targets as ``(batch, max_target_length)`` with torch's checks: concatenated 1-D targets
    must hold ``sum(target_lengths)`` labels, padded 2-D ones one row per sequence."""
    if (tg_lens < 0).any():
        raise RuntimeError("Expected target_lengths to have value at least 0, but got value "
                           f"{int(tg_lens[tg_lens < 0][0])}{_CHECKING}")
    max_len = int(tg_lens.max()) if batch else 0
    if targets.ndim == 1:
        total = int(tg_lens.sum())
        if targets.shape[0] != total:
            raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size "
                               f"{targets.shape[0]} for argument #2 'targets'{_CHECKING}")
        starts = np.concatenate([[0], np.cumsum(tg_lens)[:-1]]).astype(np.int64)
        cols = np.arange(max_len)
        idx = np.minimum(starts[:, None] + cols[None, :], max(total - 1, 0))
        return targets[idx] if total else np.zeros((batch, max_len), np.int64)
    if targets.shape[0] != batch:
        raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'{_CHECKING}")
    if targets.shape[1] < max_len:
        raise RuntimeError(f"Expected tensor to have size at least {max_len} at dimension 1, but got size "
                           f"{targets.shape[1]} for argument #2 'targets'{_CHECKING}")
    return targets[:, :max_len]


def _check_args(log_probs: Tensor, targets: Tensor, in_lens: np.ndarray, tg_lens: np.ndarray,
                blank: int) -> None:
    """torch's argument checks, in its order and words (before the targets are read)."""
    if log_probs.dim() != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.dim()}-dimensional tensor for "
                           f"argument #1 'log_probs'{_CHECKING}")
    if not 1 <= targets.dim() <= 2:
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.dim()}-dimensional tensor for "
                           f"argument #2 'targets'{_CHECKING}")
    _, batch, num_labels = log_probs.shape
    if not 0 <= blank < num_labels:
        raise RuntimeError("blank must be in label range")
    if in_lens.shape[0] != batch:
        raise RuntimeError("input_lengths must be of size batch_size")
    if tg_lens.shape[0] != batch:
        raise RuntimeError("target_lengths must be of size batch_size")
    dt = log_probs._data.dtype
    if dt not in (np.float32, np.float64):
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for \'{legacy_type_name(dt)}\'')


def _check_input_lengths(in_lens: np.ndarray, max_input: int) -> None:
    if (in_lens < 0).any():
        raise RuntimeError("Expected input_lengths to have value at least 0, but got value "
                           f"{int(in_lens[in_lens < 0][0])}{_CHECKING}")
    if (in_lens > max_input).any():
        raise RuntimeError(f"Expected input_lengths to have value at most {max_input}, but got value "
                           f"{int(in_lens[in_lens > max_input][0])}{_CHECKING}")


def _check_labels(tg: np.ndarray, tg_lens: np.ndarray, num_labels: int) -> None:
    used = np.arange(tg.shape[1])[None, :] < tg_lens[:, None]
    bad = used & ((tg < 0) | (tg >= num_labels))
    if bad.any():
        b, k = np.argwhere(bad)[0]
        raise IndexError(f"ctc_loss: target label {int(tg[b, k])} of sequence {int(b)} (position {int(k)}) "
                         f"is out of range for log_probs with {num_labels} classes")


class _Lattice:
    """The extended targets of a batch and what both recursions share.

    ``ext[b, s]``: blank at even ``s``, the ``s // 2``-th label at odd ``s``; ``valid[b, s]``:
    ``s < 2 * target_length + 1``; ``skip[b, s]``: the transition ``s - 2 -> s`` is allowed
    (a label different from the one two places before); ``lp[t, b, s]``: the log probability
    of ``ext[b, s]`` at time ``t`` (-inf outside ``valid``).
    """

    def __init__(self, log_probs: np.ndarray, tg: np.ndarray, tg_lens: np.ndarray, blank: int) -> None:
        batch, max_len = tg.shape
        self.S = 2 * max_len + 1
        ext = np.full((batch, self.S), blank, dtype=np.int64)
        ext[:, 1::2] = tg
        self.valid = np.arange(self.S)[None, :] < (2 * tg_lens + 1)[:, None]
        self.ext = np.where(self.valid, ext, blank)  # padding past a target's length is never read
        skip = np.zeros((batch, self.S), dtype=bool)
        skip[:, 3::2] = tg[:, 1:] != tg[:, :-1]
        self.skip = skip
        lp = np.take_along_axis(log_probs, np.broadcast_to(self.ext[None], (log_probs.shape[0], batch, self.S)), axis=2)
        self.lp = np.where(self.valid[None], lp, -np.inf)


def _lse3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    return np.logaddexp(np.logaddexp(a, b), c)


def _alphas(lat: _Lattice) -> np.ndarray:
    """``alpha[t, b, s]``: log probability of the prefixes of paths that are at ``s`` at ``t``."""
    T, batch, S = lat.lp.shape
    alpha = np.full((T, batch, S), -np.inf, dtype=lat.lp.dtype)
    if T == 0:
        return alpha
    alpha[0, :, :2] = lat.lp[0, :, :2]
    ninf = np.full((batch, 2), -np.inf, dtype=alpha.dtype)
    for t in range(1, T):
        prev = alpha[t - 1]
        one = np.concatenate([ninf[:, :1], prev[:, :-1]], axis=1)
        two = np.where(lat.skip, np.concatenate([ninf, prev[:, :-2]], axis=1), -np.inf)
        alpha[t] = _lse3(prev, one, two) + lat.lp[t]
    return alpha


def _betas(lat: _Lattice, in_lens: np.ndarray, tg_lens: np.ndarray) -> np.ndarray:
    """``beta[t, b, s]``: log probability of the suffixes from ``s`` at ``t`` (including ``t``)
    to the end of sequence ``b``; -inf from its input length on."""
    T, batch, S = lat.lp.shape
    beta = np.full((T, batch, S), -np.inf, dtype=lat.lp.dtype)
    s_idx = np.arange(S)[None, :]
    ends = (s_idx == 2 * tg_lens[:, None]) | ((s_idx == 2 * tg_lens[:, None] - 1) & (tg_lens[:, None] > 0))
    skip_next = np.concatenate([lat.skip[:, 2:], np.zeros((batch, 2), dtype=bool)], axis=1)
    ninf = np.full((batch, 2), -np.inf, dtype=beta.dtype)
    for t in range(T - 1, -1, -1):
        init = np.where(ends, lat.lp[t], -np.inf)
        if t + 1 < T:
            nxt = beta[t + 1]
            one = np.concatenate([nxt[:, 1:], ninf[:, :1]], axis=1)
            two = np.where(skip_next, np.concatenate([nxt[:, 2:], ninf], axis=1), -np.inf)
            rec = _lse3(nxt, one, two) + lat.lp[t]
        else:
            rec = init
        beta[t] = np.where((t == in_lens - 1)[:, None], init, np.where((t < in_lens - 1)[:, None], rec, -np.inf))
    return beta


def _nll(alpha: np.ndarray, in_lens: np.ndarray, tg_lens: np.ndarray) -> np.ndarray:
    """``-log p(target | input)`` per sequence, from the alphas at its last time step (0 for an
    empty input with an empty target, inf for an empty input with labels, as torch)."""
    batch = alpha.shape[1]
    rows = np.arange(batch)
    last = alpha[np.maximum(in_lens - 1, 0), rows]
    end_blank = last[rows, 2 * tg_lens]
    end_label = np.where(tg_lens > 0, last[rows, np.maximum(2 * tg_lens - 1, 0)], -np.inf)
    nll = -np.logaddexp(end_blank, end_label)
    empty = np.where(tg_lens == 0, -0.0, np.inf).astype(alpha.dtype)
    return np.where(in_lens == 0, empty, nll).astype(alpha.dtype)


def _grad(log_probs: np.ndarray, lat: _Lattice, alpha: np.ndarray, nll: np.ndarray, in_lens: np.ndarray,
          g: np.ndarray, zero_infinity: bool) -> np.ndarray:
    """torch's CTC gradient: ``(exp(lp) - exp(log Σ_{s: ext=c} alpha·beta + nll - lp)) * g`` inside
    each input length, 0 after it (and for infinite losses with ``zero_infinity``)."""
    tg_lens = (lat.valid.sum(axis=1) - 1) // 2
    beta = _betas(lat, in_lens, tg_lens)
    ab = alpha + beta
    m = ab.max(axis=2, keepdims=True)
    m = np.where(np.isfinite(m), m, 0)
    onehot = np.zeros((*lat.ext.shape, log_probs.shape[2]), dtype=log_probs.dtype)
    np.put_along_axis(onehot, lat.ext[..., None], 1, axis=2)
    onehot *= lat.valid[..., None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        occ = np.einsum("tns,nsc->tnc", np.exp(ab - m), onehot)
        lcab = np.log(occ) + m
        grad = (np.exp(log_probs) - np.exp(lcab + nll[None, :, None] - log_probs)) * g[None, :, None]
    inside = np.arange(log_probs.shape[0])[:, None] < in_lens[None, :]
    if zero_infinity:
        inside = inside & (nll != np.inf)[None, :]
    return np.where(inside[..., None], grad, 0).astype(log_probs.dtype)


def _ctc_nll(log_probs: Tensor, targets: Tensor, in_lens: np.ndarray, tg_lens: np.ndarray, blank: int,
             zero_infinity: bool) -> Tensor:
    """The per-sequence losses ``(batch,)`` as one ``CtcLossBackward0`` node over ``log_probs``."""
    _check_args(log_probs, targets, in_lens, tg_lens, blank)
    T, batch, num_labels = log_probs.shape
    tg = _padded_targets(targets._data.astype(np.int64), tg_lens, batch)
    _check_input_lengths(in_lens, T)
    _check_labels(tg, tg_lens, num_labels)
    lpd = log_probs._data
    lat = _Lattice(lpd, tg, tg_lens, blank)
    with np.errstate(invalid="ignore"):
        alpha = _alphas(lat)
    nll = _nll(alpha, in_lens, tg_lens)

    def backward(g):
        return (_grad(lpd, lat, alpha, nll, in_lens, np.asarray(g), zero_infinity),)

    return result(nll, "CtcLossBackward0", (log_probs,), backward, saved=(log_probs,))


def ctc_loss(log_probs: Tensor, targets: Tensor, input_lengths: Any, target_lengths: Any, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False) -> Tensor:
    """The CTC loss of ``log_probs`` ``(T, N, C)`` (or unbatched ``(T, C)``) against ``targets``:
    padded ``(N, S)`` or concatenated ``(sum(target_lengths),)`` labels.

    ``input_lengths``/``target_lengths``: integral Tensors or sequences of ints, one per sequence.
    ``reduction``: ``"mean"`` (each loss divided by its target length, at least 1, then the batch
    mean), ``"sum"`` or ``"none"``. ``zero_infinity`` turns infinite losses (impossible
    alignments: a target longer than its input allows) and their gradients into zeros.

    Raises:
        ValueError: an unknown reduction.
        RuntimeError: torch's errors for bad shapes, lengths or ``blank``.
        IndexError: a target label outside ``[0, C)``.
    """
    check_reduction(reduction)
    in_lens = _lengths(input_lengths, "input_lengths")
    tg_lens = _lengths(target_lengths, "target_lengths")
    batched = log_probs.dim() == 3
    lp = log_probs if batched else shape.unsqueeze(log_probs, 1)
    nll = _ctc_nll(lp, targets, in_lens, tg_lens, blank, zero_infinity)
    if zero_infinity:
        nll = pointwise.where(nll == float("inf"), Tensor._wrap(np.zeros((), nll._data.dtype)), nll)
    if reduction == "mean":
        divisor = Tensor._wrap(np.maximum(tg_lens, 1).astype(nll._data.dtype))
        return red.mean(pointwise.div(nll, divisor))
    if reduction == "sum":
        return red.sum(nll)
    return nll if batched else shape.squeeze(nll, 0)
