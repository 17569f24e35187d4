"""``engine.nn.utils.rnn``: variable-length sequences for the recurrent layers (torch's names).

A ``PackedSequence`` holds the time steps of a batch of sequences sorted by decreasing length,
step by step: ``data`` is ``(sum(lengths), *)``, ``batch_sizes[t]`` the number of sequences
still running at step ``t``. ``sorted_indices``/``unsorted_indices`` map between the caller's
batch order and the sorted one (None when the batch came sorted). Packing and unpacking are one
gather/scatter node each (``PackPaddedSequenceBackward0``, ``CopySlices``), as in torch; the
RNN layers accept a PackedSequence and return one (``engine/nn/modules/rnn.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

import engine._ops.indexing as indexing

from ..._ops._core import result
from ..._tensor import Tensor

__all__ = [
    "PackedSequence", "invert_permutation", "pack_padded_sequence", "pack_sequence", "pad_packed_sequence",
    "pad_sequence", "unpack_sequence", "unpad_sequence",
]


class PackedSequence_(NamedTuple):  # noqa: N801 - torch's name
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of an index permutation (``None`` stays ``None``)."""
    if permutation is None:
        return None
    perm = permutation._data
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=perm.dtype)
    return Tensor._wrap(inv)


class PackedSequence(PackedSequence_):
    """``(data, batch_sizes, sorted_indices, unsorted_indices)``: a packed batch of sequences.
    Build one with ``pack_padded_sequence`` or ``pack_sequence``; ``unsorted_indices`` defaults
    to the inverse of ``sorted_indices``, as in torch."""

    def __new__(cls, data: Tensor, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> PackedSequence:
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # torch's legacy form: PackedSequence((data, batch_sizes))
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args: Any, **kwargs: Any) -> PackedSequence:
        """``data`` converted by ``Tensor.to``; the index tensors stay int64 on the CPU."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else type(self)(data, self.batch_sizes, self.sorted_indices,
                                                         self.unsorted_indices)

    def cpu(self, *args: Any, **kwargs: Any) -> PackedSequence:
        return self

    def double(self) -> PackedSequence:
        return self.to(dtype=self.data.double().dtype)

    def float(self) -> PackedSequence:
        return self.to(dtype=self.data.float().dtype)

    def half(self) -> PackedSequence:
        return self.to(dtype=self.data.half().dtype)

    def long(self) -> PackedSequence:
        return self.to(dtype=self.data.long().dtype)

    def int(self) -> PackedSequence:
        return self.to(dtype=self.data.int().dtype)

    @property
    def is_cuda(self) -> bool:
        return False

    def is_pinned(self) -> bool:
        return False

    def pin_memory(self) -> PackedSequence:
        """Raises as torch's CPU build does: there is no accelerator to pin memory for."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)


def _lengths_array(lengths: Any) -> np.ndarray:
    arr = lengths._data if isinstance(lengths, Tensor) else np.asarray(lengths)
    return arr.astype(np.int64).reshape(-1)


def _packed_rows(lengths: np.ndarray, steps: int, batch_major: bool) -> np.ndarray:
    """Flat row indices, into a padded (T, B) grid (``(B, T)`` when ``batch_major``), of the
    packed elements in packed order (time step by time step, sorted batch order within a step)."""
    t = np.arange(steps)[:, None]
    running = t < lengths[None, :]  # (T, B)
    tt, bb = np.nonzero(running)
    b = lengths.size
    return bb * steps + tt if batch_major else tt * b + bb


def _batch_sizes(lengths: np.ndarray) -> np.ndarray:
    return (np.arange(int(lengths.max()))[:, None] < lengths[None, :]).sum(1).astype(np.int64)


def pack_padded_sequence(input: Tensor, lengths: Tensor | Sequence[int], batch_first: bool = False,  # noqa: A002
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) batch (``(B, T, *)`` with ``batch_first``) of sequences of the given
    ``lengths``. With ``enforce_sorted`` the lengths must decrease; otherwise the batch is sorted
    here (stably, as torch's sort) and the permutation kept in the result."""
    lens = _lengths_array(lengths)
    if enforce_sorted:
        if lens.size > 1 and np.any(lens[:-1] < lens[1:]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. You can pass "
                "`enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sidestep this requirement "
                "if you do not need ONNX exportability."
            )
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable")
        sorted_indices = Tensor._wrap(order.astype(np.int64))
        lens = lens[order]
        input = indexing.index_select(input, 0 if batch_first else 1, sorted_indices)
    x = input._data
    steps, batch = (x.shape[1], x.shape[0]) if batch_first else (x.shape[0], x.shape[1])
    if lens.size != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
                           f"(batch_size={batch})")
    if lens.size and lens.min() <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' "
                           "that is <= 0")
    if lens.size and lens.max() > steps:  # torch reads past the end here; the engine refuses
        raise RuntimeError(f"pack_padded_sequence: a length ({int(lens.max())}) exceeds the padded sequence "
                           f"length ({steps})")
    rows = _packed_rows(lens, steps, batch_first)
    flat_shape = (steps * batch,) + x.shape[2:]
    data = x.reshape(flat_shape)[rows]

    def backward(g):
        gx = np.zeros(flat_shape, g.dtype)
        gx[rows] = g
        return (gx.reshape(x.shape),)

    packed = result(data, "PackPaddedSequenceBackward0", (input,), backward)
    return PackedSequence(packed, Tensor._wrap(_batch_sizes(lens)), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple[Tensor, Tensor]:
    """The inverse of ``pack_padded_sequence``: ``(padded, lengths)`` in the caller's original
    batch order, padded with ``padding_value`` to ``total_length`` steps (default: the longest)."""
    data, batch_sizes = sequence.data, sequence.batch_sizes._data
    max_len = int(batch_sizes.size)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in input, but got "
                f"total_length={total_length} and max sequence length being {max_len}"
            )
        max_len = int(total_length)
    batch = int(batch_sizes[0])
    lens = (np.arange(batch)[None, :] < batch_sizes[:, None]).sum(0).astype(np.int64)
    rows = _packed_rows(lens, max_len, False)
    d = data._data
    shape = (max_len, batch) + d.shape[1:]
    out = np.full((max_len * batch,) + d.shape[1:], padding_value, d.dtype)
    out[rows] = d

    def backward(g):
        return (g.reshape((max_len * batch,) + d.shape[1:])[rows],)

    padded = result(out.reshape(shape), "CopySlices", (data,), backward)
    if batch_first:  # torch pads time-major, then transposes (TransposeBackward0)
        padded = padded.transpose(0, 1)
    lengths = Tensor._wrap(lens)
    if sequence.unsorted_indices is not None:
        padded = indexing.index_select(padded, 0 if batch_first else 1, sequence.unsorted_indices)
        lengths = Tensor._wrap(lens[sequence.unsorted_indices._data])
    return padded, lengths


def pad_sequence(sequences: Tensor | Sequence[Tensor], batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack sequences of different lengths (each ``(L_i, *)``) into one ``(T, B, *)`` tensor
    (``(B, T, *)`` with ``batch_first``), padded on the right (or the ``left``)."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        for k, (a, b) in enumerate(zip(trailing, s.shape[1:])):
            if a != b:
                raise RuntimeError(f"The size of tensor a ({a}) must match the size of tensor b ({b}) at "
                                   f"non-singleton dimension {k + 1}")
    lens = np.array([s.shape[0] for s in sequences], np.int64)
    steps, batch = int(lens.max()), len(sequences)
    t = np.arange(steps)[None, :]
    mask = t < lens[:, None] if padding_side == "right" else t >= steps - lens[:, None]  # (B, T)
    dtype = np.result_type(*[s._data.dtype for s in sequences])
    out = np.full((batch, steps) + trailing, padding_value, dtype)
    out[mask] = np.concatenate([s._data.reshape((-1,) + trailing) for s in sequences])
    if not batch_first:
        out = np.ascontiguousarray(out.swapaxes(0, 1))
    splits = np.cumsum(lens)[:-1]

    def backward(g):
        gb = g if batch_first else g.swapaxes(0, 1)
        return tuple(np.split(gb[mask], splits))

    return result(out, "CopySlices", sequences, backward)


def pack_sequence(sequences: Sequence[Tensor], enforce_sorted: bool = True) -> PackedSequence:
    """``pack_padded_sequence(pad_sequence(sequences), lengths)``."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences: Tensor, lengths: Tensor, batch_first: bool = False) -> list[Tensor]:
    """The list of sequences ``pad_sequence`` stacked: ``padded[:length]`` for each one."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:int(n)] for seq, n in zip(padded_sequences.unbind(0), _lengths_array(lengths))]


def unpack_sequence(packed_sequences: PackedSequence) -> list[Tensor]:
    """The list of sequences ``pack_sequence`` packed, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
