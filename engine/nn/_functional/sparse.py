"""embedding (a row lookup, ``EmbeddingBackward0``) and one_hot.

The embedding gradient sums rows of the output gradient per index. It is computed by sorting the
indices once and ``np.add.reduceat`` over the runs of equal indices (never ``np.add.at``, which is
slow), so it stays vectorised for any number of repeats.
"""

from __future__ import annotations

import numpy as np

from ..._ops._core import result
from ..._tensor import Tensor


def _check_indices(idx: np.ndarray, what: str) -> None:
    if idx.dtype not in (np.int64, np.int32):
        kind = {"float32": "Float", "float64": "Double", "bool": "Bool", "int16": "Short",
                "int8": "Char", "uint8": "Byte"}.get(idx.dtype.name, idx.dtype.name)
        raise RuntimeError(
            f"Expected tensor for argument #1 '{what}' to have one of the following scalar types: "
            f"Long, Int; but got engine.{kind}Tensor instead (while checking arguments for embedding)"
        )


def embedding(input, weight, padding_idx: int | None = None, max_norm: float | None = None,  # noqa: A002
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer tensor ``input``.

    ``padding_idx`` rows get no gradient; ``max_norm`` renormalises the looked-up rows of
    ``weight`` in place first (as torch does); ``scale_grad_by_freq`` divides each row's gradient
    by how often its index occurs in ``input``. ``sparse`` gradients do not exist in the engine.
    """
    w = weight._data
    idx = input._data
    _check_indices(idx, "indices")
    if w.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = w.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % num
    if sparse:
        raise NotImplementedError("engine has no sparse tensors: use embedding(..., sparse=False)")
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if max_norm is not None:
        _renorm_rows(w, idx, max_norm, norm_type)
    flat = idx.reshape(-1)
    out = w[flat].reshape(idx.shape + (w.shape[1],))

    def backward(g):
        return (_embedding_grad(g.reshape(-1, w.shape[1]), flat, num, padding_idx, scale_grad_by_freq),)

    return result(out, "EmbeddingBackward0", (weight,), backward, saved=(weight,))


def _renorm_rows(w: np.ndarray, idx: np.ndarray, max_norm: float, norm_type: float) -> None:
    """torch's ``embedding_renorm_``: rows whose norm exceeds ``max_norm`` are scaled to it."""
    rows = np.unique(idx)
    norms = np.linalg.norm(w[rows].astype(np.float64), ord=norm_type, axis=1)
    big = norms > max_norm
    scale = (max_norm / (norms[big] + 1e-7)).astype(w.dtype)
    w[rows[big]] *= scale[:, None]


def _embedding_grad(g: np.ndarray, flat: np.ndarray, num: int, padding_idx: int | None,
                    scale_grad_by_freq: bool) -> np.ndarray:
    out = np.zeros((num, g.shape[1]), g.dtype)
    if flat.size == 0:
        return out
    order = np.argsort(flat, kind="stable")
    sorted_idx = flat[order]
    rows, starts, counts = np.unique(sorted_idx, return_index=True, return_counts=True)
    sums = np.add.reduceat(g[order], starts, axis=0)
    if scale_grad_by_freq:
        sums /= counts[:, None].astype(g.dtype)
    out[rows] = sums
    if padding_idx is not None:
        out[padding_idx] = 0
    return out


def one_hot(tensor, num_classes: int = -1):
    """An int64 tensor with a trailing dim of size ``num_classes`` (inferred as max + 1 when -1)
    holding 1 at each value's position."""
    x = tensor._data
    if x.dtype != np.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        if x.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(x.max()) + 1
    if x.size:
        if x.min() < 0:
            raise RuntimeError("Class values must be non-negative.")
        if x.max() >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    out = (x[..., None] == np.arange(num_classes)).astype(np.int64)
    return Tensor._wrap(out)



def embedding_bag(input, weight, offsets=None, max_norm: float | None = None, norm_type: float = 2,  # noqa: A002
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx: int | None = None):
    """Sums, means or maxima of bags of ``weight`` rows, in one node (``EmbeddingBagBackward0``).

    A 2-D ``input`` is a batch of equal-length bags; a 1-D one is cut into bags at ``offsets``
    (the last offset closing the last bag with ``include_last_offset``). ``per_sample_weights``
    (mode ``'sum'``) scales each looked-up row; ``padding_idx`` entries are left out (and not
    counted by the mean); an empty bag gives zeros.
    """
    idx_t = input
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError("if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets)}")
        b, n = input.shape
        starts = np.arange(0, b * n, n, dtype=np.int64)
        idx = input._data.reshape(-1)
    elif input.ndim == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.ndim != 1:
            raise ValueError("offsets has to be a 1D Tensor")
        idx = input._data
        starts = offsets._data.astype(np.int64)
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.ndim}")
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _renorm_rows(weight._data, idx, max_norm, norm_type)
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(idx_t.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, then it "
                         f"must have the same shape as the input ({idx_t.shape})")
    if not weight.ndim == 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.ndim}")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError("embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                  f"supported for mode='sum' (got mode='{mode}'). Please open a feature request on "
                                  "GitHub.")
    if sparse:
        raise NotImplementedError("engine has no sparse tensors: use embedding_bag(..., sparse=False)")
    _check_indices(idx, "indices")
    if starts.size and starts[0] != 0:
        raise RuntimeError("offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {int(starts[0])}\n[ torch.LongTensor{{}} ]")
    if starts.size and starts[-1] > idx.size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {idx.size} but got offsets[-1] of "
                           f"{int(starts[-1])}")
    w = weight._data
    num, dim = w.shape
    if idx.size and (idx.min() < 0 or idx.max() >= num):
        raise IndexError("index out of range in self")
    if padding_idx is not None:
        padding_idx = padding_idx % num
    end = idx.size
    if include_last_offset and starts.size:
        starts, end = starts[:-1], int(starts[-1])
    bags = starts.size
    seg = np.searchsorted(starts, np.arange(idx.size), side="right") - 1  # bag of each element
    keep = np.arange(idx.size) < end
    if padding_idx is not None:
        keep &= idx != padding_idx
    pos = np.nonzero(keep)[0]
    rows_idx, rows_seg = idx[pos], seg[pos]
    vals = w[rows_idx]
    psw = None if per_sample_weights is None else per_sample_weights._data.reshape(-1)[pos]
    if psw is not None:
        vals = vals * psw[:, None]
    counts = np.bincount(rows_seg, minlength=bags)
    filled = counts > 0
    first = (np.cumsum(counts) - counts)[filled]  # where each non-empty bag's rows start
    out = np.zeros((bags, dim), w.dtype)
    chosen = None
    if pos.size and mode == "max":
        out[filled] = np.maximum.reduceat(vals, first, axis=0)
        order = np.where(vals == out[rows_seg], np.arange(pos.size)[:, None], pos.size)
        chosen = np.minimum.reduceat(order, first, axis=0)  # (filled bags, dim): the first maximum
    elif pos.size:
        out[filled] = np.add.reduceat(vals, first, axis=0)
        if mode == "mean":
            out[filled] /= counts[filled, None].astype(w.dtype)
    out = out.astype(w.dtype, copy=False)
    scale = (1.0 / np.maximum(counts, 1))[rows_seg] if mode == "mean" else np.ones(pos.size)

    def backward(g):
        if mode == "max":
            per = np.zeros((pos.size, dim), g.dtype)
            if pos.size:
                cols = np.broadcast_to(np.arange(dim), chosen.shape)
                per[chosen, cols] = g[filled]
        else:
            per = g[rows_seg] * scale[:, None].astype(g.dtype)
            if psw is not None:
                per = per * psw[:, None]
        gw = _embedding_grad(per, rows_idx, num, padding_idx, scale_grad_by_freq)
        gp = None
        if per_sample_weights is not None:
            gp = np.zeros(idx.size, g.dtype)
            gp[pos] = (g[rows_seg] * w[rows_idx]).sum(1)
            gp = gp.reshape(per_sample_weights.shape)
        return gw, gp

    return result(out, "EmbeddingBagBackward0", (weight, per_sample_weights), backward, saved=(weight,))
