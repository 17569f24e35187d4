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

